//! Text to token ids: Hugging Face tokenizers read from `tokenizer.json`.

mod tokenizer;

pub use tokenizer::*;

#[cfg(test)]
mod tests;
