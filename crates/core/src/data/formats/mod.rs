//! File formats and the records read from them: LETOR/SVMlight feature files, TREC qrels and
//! runs, text collections by id, the MS MARCO layout put together, text pairs and triplets,
//! triplets of token ids, and the synthetic LETOR-like generator.

pub(crate) mod bom;
mod collection;
mod letor;
mod ltr_dataset;
pub(crate) mod msmarco;
mod synthetic_ltr;
mod text_pairs;
pub(crate) mod text_triplets;
mod token_triplets;
pub(crate) mod trec;

pub use collection::*;
pub use letor::*;
pub use ltr_dataset::*;
pub use msmarco::*;
pub use synthetic_ltr::*;
pub use text_pairs::*;
pub use text_triplets::*;
pub use token_triplets::*;
pub use trec::{read_id_triplets, Candidate, Qrels, TrecRun};
