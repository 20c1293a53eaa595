//! Samplers: what draws the training batches from the records, pass after pass, in an order
//! that is a function of the seed and resumes exactly from a checkpoint.

mod ltr;
mod shuffled_pass;
mod slates;
mod text_pairs;
mod text_triplets;
mod token_triplets;

pub use ltr::*;
pub use shuffled_pass::*;
pub use slates::*;
pub use text_pairs::*;
pub use text_triplets::*;
pub use token_triplets::*;
