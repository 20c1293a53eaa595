//! Records, datasets and samplers.

mod bom;
mod collection;
mod encoded;
mod inputs;
mod js;
mod letor;
mod ltr;
mod msmarco;
mod pass;
mod prefetch;
mod records;
mod samplers;
mod slates;
mod synthetic;
mod text_pairs;
mod text_triplets;
mod trec;
mod triplets;

pub use collection::*;
pub use encoded::*;
pub use inputs::*;
pub use js::*;
pub use letor::*;
pub use ltr::*;
pub use msmarco::*;
pub use pass::*;
pub use prefetch::*;
pub use records::*;
pub use samplers::*;
pub use slates::*;
pub use synthetic::*;
pub use text_pairs::*;
pub use text_triplets::*;
pub use trec::{read_id_triplets, Candidate, Qrels, TrecRun};
pub use triplets::*;
