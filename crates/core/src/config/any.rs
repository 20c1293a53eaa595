use super::tagged::config_enum;
use super::*;

config_enum! {
    /// Any configuration class the core reads: what the contract test round-trips.
    #[derive(Debug, Clone, PartialEq)]
    pub enum AnyConfig {
        /// A Learner.
        Learner(Box<LearnerConfig>) = "xpm_torch.learner.Learner",
        /// A seed.
        Random(RandomConfig) = "xpm_torch.base.Random",
        /// A checkpoint selector.
        CheckpointSettings(CheckpointSettings) = "xpm_torch.learner.CheckpointSettings",
        /// Devices and precision.
        Fabric(FabricConfiguration) = "xpm_torch.configuration.FabricConfiguration",
        /// A loss.
        Hinge(HingeLossConfig) = "xpm_torch.losses.pairwise.HingeLoss",
        /// A loss.
        PairwiseCrossEntropy(WeightOnly) = "xpm_torch.losses.pairwise.CrossEntropyLoss",
        /// A loss.
        PointwiseCrossEntropy(WeightOnly) = "xpm_torch.losses.pairwise.PointwiseCrossEntropyLoss",
        /// A loss.
        BatchwiseCrossEntropy(WeightOnly) = "xpm_torch.losses.batchwise.CrossEntropyLoss",
        /// A loss.
        SoftmaxCrossEntropy(WeightOnly) = "xpm_torch.losses.batchwise.SoftmaxCrossEntropy",
        /// A loss.
        ListNetLoss(WeightOnly) = "xpm_torch.losses.listwise.ListNetLoss",
        /// A loss.
        ListMleLoss(WeightOnly) = "xpm_torch.losses.listwise.ListMLELoss",
        /// A loss.
        RankNetLoss(RankNetLossConfig) = "xpm_torch.losses.listwise.RankNetLoss",
        /// A loss.
        LambdaLoss(LambdaLossConfig) = "xpm_torch.losses.listwise.LambdaLoss",
        /// A loss.
        ApproxNdcgLoss(ApproxNdcgLossConfig) = "xpm_torch.losses.listwise.ApproxNDCGLoss",
        /// A loss.
        NeuralNdcgLoss(NeuralNdcgLossConfig) = "xpm_torch.losses.listwise.NeuralNDCGLoss",
        /// A hook.
        GradientClipping(GradientClippingConfig) = "xpm_torch.optim.GradientClippingHook",
        /// A hook.
        GradientLog(GradientLogConfig) = "xpm_torch.optim.GradientLogHook",
        /// A batcher.
        Batcher(NoParams) = "xpm_torch.batchers.Batcher",
        /// A batcher.
        PowerAdaptativeBatcher(NoParams) = "xpm_torch.batchers.PowerAdaptativeBatcher",
        /// A batcher.
        PredictiveBatcher(PredictiveBatcherConfig) = "xpm_torch.batchers.PredictiveBatcher",
        /// Probe points.
        BatchDimsProvider(BatchDimsProviderConfig) = "xpm_torch.batchers.BatchDimsProvider",
        /// A probe point.
        ProbePoint(ProbePointConfig) = "xpm_torch.batchers.ProbePoint",
        /// A packer.
        UniformPacker(NoParams) = "xpm_torch.batchers.UniformPacker",
        /// A packer.
        AdaptivePacker(AdaptivePackerConfig) = "xpm_torch.batchers.AdaptivePacker",
        /// A trainer.
        LossTrainer(LossTrainerConfig) = "xpm_torch.trainers.LossTrainer",
        /// A trainer.
        MultipleTrainer(MultipleTrainerConfig) = "xpm_torch.trainers.multiple.MultipleTrainer",
        /// An optimizer.
        Sgd(SgdConfig) = "xpm_torch.optim.SGD",
        /// An optimizer.
        Adam(AdamConfig) = "xpm_torch.optim.Adam",
        /// An optimizer.
        AdamW(AdamConfig) = "xpm_torch.optim.AdamW",
        /// An optimizer.
        Adafactor(AdafactorConfig) = "xpm_torch.optim.Adafactor",
        /// A schedule.
        LinearWithWarmup(LinearWithWarmupConfig) = "xpm_torch.schedulers.LinearWithWarmup",
        /// A schedule.
        CosineWithWarmup(CosineWithWarmupConfig) = "xpm_torch.schedulers.CosineWithWarmup",
        /// A schedule.
        LinearWithWarmupAndMaxEpochs(LinearWithWarmupAndMaxEpochsConfig) = "xpm_torch.schedulers.LinearWithWarmupAndMaxEpochs",
        /// A filter.
        ParameterFilter(NoParams) = "xpm_torch.optim.ParameterFilter",
        /// A filter.
        RegexParameterFilter(RegexFilterConfig) = "xpm_torch.optim.RegexParameterFilter",
        /// An optimizer with its selection.
        ParameterOptimizer(ParameterOptimizerConfig) = "xpm_torch.optim.ParameterOptimizer",
        /// A listener.
        TrainerValidationLoss(Box<TrainerValidationLossConfig>) = "xpm_torch.trainers.validation.TrainerValidationLoss",
        /// A listener.
        RankingValidationListener(Box<RankingValidationConfig>) = "xpm_torch.listeners.RankingValidationListener",
        /// A hook.
        LayerFreezer(LayerFreezerConfig) = "xpm_torch.trainers.hooks.LayerFreezer",
        /// A hook.
        LayerSharer(LayerSharerConfig) = "xpm_torch.trainers.hooks.LayerSharer",
        /// An object written in TypeScript.
        JsObject(JsObjectConfig) = "xpm_torch.js.JsObject",
        /// A selector.
        RegexParametersIterator(RegexIteratorConfig) = "xpm_torch.parameters.RegexParametersIterator",
        /// A selector.
        InverseParametersIterator(Box<InverseIteratorConfig>) = "xpm_torch.parameters.InverseParametersIterator",
        /// A selector.
        SubParametersIterator(Box<SubIteratorConfig>) = "xpm_torch.parameters.SubParametersIterator",
        /// Validation checkpoint selector.
        ValidationSettings(ValidationSettings) = "xpm_torch.validation.ValidationSettings",
        /// A saved model's loader.
        ModuleLoader(ModuleLoaderConfig) = "xpm_torch.module.SimpleModuleLoader",
        /// A model.
        MlpScorer(MlpScorerConfig) = "xpm_torch.models.MlpScorer",
        /// A model.
        Linear(LinearConfig) = "xpm_torch.models.Linear",
        /// A model.
        Mlp(MlpConfig) = "xpm_torch.models.MLP",
        /// A model.
        EmbeddingDualEncoder(DualEncoderConfig) = "xpm_torch.models.EmbeddingDualEncoder",
        /// A model.
        Drmm(DrmmConfig) = "xpm_torch.models.DRMM",
        /// A model.
        TransformerCrossEncoder(TransformerConfig) = "xpm_torch.models.TransformerCrossEncoder",
        /// A model.
        TorchScriptModel(TorchScriptConfig) = "xpm_torch.models.TorchScriptModel",
        /// A model.
        MultipleModel(MultipleModelConfig) = "xpm_torch.module.MultipleModel",
        /// A model.
        CrossEncoder(CrossEncoderConfig) = "xpm_torch.models.CrossEncoder",
        /// A model.
        BiEncoder(BiEncoderConfig) = "xpm_torch.models.BiEncoder",
        /// A model.
        SigmoidOutput(SigmoidOutputConfig) = "xpm_torch.models.SigmoidOutput",
        /// A pretrained encoder.
        HfEncoder(HfEncoderConfig) = "xpm_torch.models.HFEncoder",
        /// A dataset.
        SyntheticLtrDataset(SyntheticLtrConfig) = "xpm_torch.data.SyntheticLtrDataset",
        /// A dataset.
        LetorDataset(LetorDatasetConfig) = "xpm_torch.data.LetorDataset",
        /// A sampler.
        PairwiseSampler(PairwiseSamplerConfig) = "xpm_torch.samplers.PairwiseSampler",
        /// A sampler.
        PointwiseSampler(PairwiseSamplerConfig) = "xpm_torch.samplers.PointwiseSampler",
        /// A sampler.
        BatchwiseSampler(BatchwiseSamplerConfig) = "xpm_torch.samplers.BatchwiseSampler",
        /// A sampler.
        SlateSampler(SlateSamplerConfig) = "xpm_torch.samplers.SlateSampler",
        /// A sampler.
        TokenTripletSampler(TokenTripletSamplerConfig) = "xpm_torch.samplers.TokenTripletSampler",
        /// A sampler.
        TextTripletSampler(TextTripletSamplerConfig) = "xpm_torch.samplers.TextTripletSampler",
        /// Triplets.
        TextTripletFile(TextTripletFileConfig) = "xpm_torch.data.TextTripletFile",
        /// A sampler.
        TextPairSampler(TextPairSamplerConfig) = "xpm_torch.samplers.TextPairSampler",
        /// Scored pairs.
        TextPairFile(TextPairFileConfig) = "xpm_torch.data.TextPairFile",
        /// A sampler.
        IdTripletSampler(Box<IdTripletSamplerConfig>) = "xpm_torch.samplers.IdTripletSampler",
        /// Texts by id.
        TextCollection(TextCollectionConfig) = "xpm_torch.data.TextCollection",
        /// Judgements.
        TrecQrels(TrecQrelsConfig) = "xpm_torch.data.TrecQrels",
        /// Candidates.
        TrecRun(TrecRunConfig) = "xpm_torch.data.TrecRun",
        /// Triplets of ids.
        IdTripletFile(IdTripletFileConfig) = "xpm_torch.data.IdTripletFile",
        /// A dataset.
        TextRerankingDataset(Box<TextRerankingConfig>) = "xpm_torch.data.TextRerankingDataset",
        /// Triplets.
        TokenTripletFile(TripletFileConfig) = "xpm_torch.data.TokenTripletFile",
        /// Triplets.
        SyntheticTokenTriplets(SyntheticTripletsConfig) = "xpm_torch.data.SyntheticTokenTriplets",
    }
}

impl AnyConfig {
    /// The cross-field rules the core checks on this class (see [`LearnerConfig::validate`]).
    pub(crate) fn validate(&self, path: &str) -> crate::Result<()> {
        let model = |m: ModelConfig| m.validate(path);
        match self {
            AnyConfig::Learner(c) => c.validate(path),
            AnyConfig::Adafactor(c) => c.validate(path),
            AnyConfig::TransformerCrossEncoder(c) => model(ModelConfig::Transformer(c.clone())),
            AnyConfig::MultipleModel(c) => model(ModelConfig::Multiple(c.clone())),
            AnyConfig::SigmoidOutput(c) => model(ModelConfig::Sigmoid(c.clone())),
            AnyConfig::SyntheticTokenTriplets(c) => c.validate(path),
            _ => Ok(()),
        }
    }
}
