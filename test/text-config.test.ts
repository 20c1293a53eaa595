import { describe, expect, it } from "vitest";

import { BiEncoder, CrossEncoder, HFEncoder, TextTripletFile } from "../ts/config/classes/index.js";
import { identifierOf } from "../ts/config/identifiers.js";
import { ConfigError } from "../ts/errors.js";

describe("pretrained text model classes", () => {
  it("identify an encoder by its id, not by where its directory is", () => {
    const here = HFEncoder.C({ id: "all-MiniLM-L6-v2", path: "/models/a" });
    const there = HFEncoder.C({ id: "all-MiniLM-L6-v2", path: "/elsewhere/b" });
    const other = HFEncoder.C({ id: "other-model", path: "/models/a" });
    expect(identifierOf(CrossEncoder.C({ encoder: here }))).toBe(identifierOf(CrossEncoder.C({ encoder: there })));
    expect(identifierOf(CrossEncoder.C({ encoder: here }))).not.toBe(identifierOf(CrossEncoder.C({ encoder: other })));
  });

  it("give bi-encoders sentence-transformers' defaults and refuse unknown choices", () => {
    const encoder = HFEncoder.C({ id: "m", path: "/m" });
    const model = BiEncoder.C({ encoder });
    expect([model.pooling, model.normalize, model.similarity, model.max_length]).toEqual(["mean", true, "dot", 512]);
    expect(() => BiEncoder.C({ encoder, pooling: "max" as "mean" })).toThrow(ConfigError);
    expect(() => CrossEncoder.C({ encoder, max_length: 2 })).toThrow(/max_length/);
    expect(() => TextTripletFile.C({ id: "t", path: "/t.csv", format: "csv" })).toThrow(/format/);
  });

  it("take a Hub id without a path, a revision only with it, and say what a bad id should be", () => {
    const byId = HFEncoder.C({ id: "sentence-transformers/all-MiniLM-L6-v2" });
    const pinned = HFEncoder.C({ id: "sentence-transformers/all-MiniLM-L6-v2", revision: "v1" });
    expect(identifierOf(CrossEncoder.C({ encoder: byId }))).not.toBe(identifierOf(CrossEncoder.C({ encoder: pinned })));
    expect(() => HFEncoder.C({ id: "not a hub id" })).toThrow(/id: "not a hub id" is not a Hugging Face Hub id .*give .*path/);
    expect(() => HFEncoder.C({ id: "m", path: "/m", revision: "main" })).toThrow(/revision: is for a model of the Hub/);
  });
});
