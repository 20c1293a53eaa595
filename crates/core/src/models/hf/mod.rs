//! Pretrained encoders read from Hugging Face directories (BERT, RoBERTa, XLM-RoBERTa,
//! DistilBERT, ELECTRA), written over tch with Hugging Face's parameter names.

mod by_length;
mod config;
mod encoder;
mod export;
mod head;
mod model;
mod scorers;
mod weights;

pub use config::*;
pub use encoder::EncoderInput;
pub use export::*;
pub use model::*;
pub use scorers::*;
pub use weights::*;

#[cfg(test)]
mod dropout_tests;
#[cfg(test)]
mod tests;
