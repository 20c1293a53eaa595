use serde::{Deserialize, Serialize};

use super::models::Similarity;
use super::tagged::{config_types, Typed};

/// A pretrained encoder read from a local Hugging Face directory (config.json, safetensors
/// weights, tokenizer.json).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HfEncoderConfig {
    /// What the model is (its identity: paths never enter identifiers).
    pub id: String,
    /// The directory.
    pub path: String,
}

/// How a bi-encoder turns hidden states into one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pooling {
    /// The mask-weighted mean over real tokens.
    Mean,
    /// The first (`[CLS]`) token's hidden state.
    Cls,
}

/// `[CLS] query [SEP] document [SEP]` through a pretrained encoder and a one-label
/// sequence-classification head: the file's when it has one, otherwise new.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CrossEncoderConfig {
    /// The encoder.
    pub encoder: Typed<HfEncoderConfig>,
    /// Longest pair, special tokens included (longest first truncation).
    pub max_length: i64,
}

/// Query and document embedded apart by pretrained encoders, then compared.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BiEncoderConfig {
    /// The document encoder, also the query encoder unless `query_encoder` is set.
    pub encoder: Typed<HfEncoderConfig>,
    /// A separate query encoder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_encoder: Option<Typed<HfEncoderConfig>>,
    /// How hidden states become one vector.
    pub pooling: Pooling,
    /// Whether vectors are L2-normalised before comparing.
    pub normalize: bool,
    /// The score.
    pub similarity: Similarity,
    /// Longest text, special tokens included.
    pub max_length: i64,
}

/// A TSV or JSONL file of text triplets.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TextTripletFileConfig {
    /// What the data is (its identity: paths never enter identifiers).
    pub id: String,
    /// The file.
    pub path: String,
    /// `tsv` or `jsonl`; when absent, the file's extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
}

/// (query, positive, negative) text triplets, encoded by the model's tokenizer.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TextTripletSamplerConfig {
    /// The triplets.
    pub triplets: Typed<TextTripletFileConfig>,
}

/// A TSV or JSONL file of scored text pairs.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TextPairFileConfig {
    /// What the data is (its identity: paths never enter identifiers).
    pub id: String,
    /// The file.
    pub path: String,
    /// `tsv` or `jsonl`; when absent, the file's extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
}

/// (query, document, score) text records for pointwise losses.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TextPairSamplerConfig {
    /// The pairs.
    pub pairs: Typed<TextPairFileConfig>,
}

/// An `id<TAB>text` file (documents or queries, as MS MARCO's `collection.tsv` and
/// `queries.tsv`), read by id through an offset index.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TextCollectionConfig {
    /// What the data is (its identity: paths never enter identifiers).
    pub id: String,
    /// The file.
    pub path: String,
}

/// A TREC file (qrels, run, triplets of ids): its identity and its path.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TrecFileConfig {
    /// What the data is (its identity: paths never enter identifiers).
    pub id: String,
    /// The file.
    pub path: String,
}

/// Training triplets of ids (`qid<TAB>positive docid<TAB>negative docid`) over text
/// collections.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IdTripletSamplerConfig {
    /// The query texts.
    pub queries: Typed<TextCollectionConfig>,
    /// The document texts.
    pub documents: Typed<TextCollectionConfig>,
    /// The triplets of ids (`xpm_torch.data.IdTripletFile`).
    pub triplets: Typed<IdTripletFileConfig>,
}

/// Candidates of a TREC run re-ranked against TREC qrels, over text collections.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TextRerankingConfig {
    /// The query texts.
    pub queries: Typed<TextCollectionConfig>,
    /// The document texts.
    pub documents: Typed<TextCollectionConfig>,
    /// The judgements.
    pub qrels: Typed<TrecQrelsConfig>,
    /// The candidates.
    pub run: Typed<TrecRunConfig>,
    /// Candidates kept per query, best ranked first (all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u64>,
    /// (query, document) pairs scored per forward when validating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<u64>,
}

macro_rules! trec_file {
    ($($name:ident = $id:literal,)+) => {
        $(
            #[doc = concat!("`", $id, "`.")]
            #[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
            #[serde(transparent)]
            pub struct $name(pub TrecFileConfig);

            impl std::ops::Deref for $name {
                type Target = TrecFileConfig;
                fn deref(&self) -> &TrecFileConfig {
                    &self.0
                }
            }
        )+
        config_types! { $($name = $id,)+ }
    };
}

trec_file! {
    TrecQrelsConfig = "xpm_torch.data.TrecQrels",
    TrecRunConfig = "xpm_torch.data.TrecRun",
    IdTripletFileConfig = "xpm_torch.data.IdTripletFile",
}

config_types! {
    HfEncoderConfig = "xpm_torch.models.HFEncoder",
    TextTripletFileConfig = "xpm_torch.data.TextTripletFile",
    TextCollectionConfig = "xpm_torch.data.TextCollection",
    TextPairFileConfig = "xpm_torch.data.TextPairFile",
}
