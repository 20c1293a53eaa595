// The unions of datasets that samplers and listeners take: classes of datasets.ts, kept out of the
// package's exports (index.ts exports every module of this folder but this one).
import { configUnion } from "../class.js";
import { InMemoryLtrDataset, LetorDataset, SyntheticLtrDataset, TextRerankingDataset } from "./datasets.js";

/** The learning-to-rank datasets. */
export const ltrDataset = () => configUnion("LtrDataset", SyntheticLtrDataset, LetorDataset, InMemoryLtrDataset);

/** The datasets whose queries are ranked as a whole: the feature ones and a text run to re-rank. */
export const rankedDataset = () =>
  configUnion("RankedDataset", SyntheticLtrDataset, LetorDataset, InMemoryLtrDataset, TextRerankingDataset);
