import { describe, expect, it } from "vitest";

import {
  CallbackError,
  CancelledError,
  CheckpointError,
  ConfigError,
  DataError,
  DistributedError,
  FileError,
  InternalError,
  InterruptedError,
  ModelDirectoryError,
  NonFiniteError,
  OutOfMemoryError,
  TorchError,
  UnsupportedError,
  XpmTorchError,
} from "../ts/index.js";
import { unwrapOutcome } from "../ts/learn.js";
import { loadNative } from "../ts/native.js";

/** Each core error the binding's self-test builds, as learn() would raise it. */
function crossed(): XpmTorchError[] {
  return loadNative().binding.errorSamples().map((outcome) => {
    try {
      unwrapOutcome(outcome);
    } catch (error) {
      return error as XpmTorchError;
    }
    throw new Error(`not a failed outcome: ${outcome}`);
  });
}

describe("core errors crossing the binding", () => {
  it("become their TypeScript class with every field", () => {
    const [config, torch, oom, panic, cancelled, interrupted, io, nonFinite, checkpoint, data, callback, modelDirectory, unsupported, env, rendezvous, collective] =
      crossed();
    expect(config).toBeInstanceOf(ConfigError);
    expect(config).toMatchObject({ code: "ERR_CONFIG", path: "trainer.batch_size", message: "trainer.batch_size: must be at least 1" });
    expect(torch).toBeInstanceOf(TorchError);
    expect(torch).not.toBeInstanceOf(OutOfMemoryError);
    expect(torch!.message).toBe("libtorch error: mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)");
    expect(oom).toBeInstanceOf(OutOfMemoryError);
    // Still a libtorch error for code that catches those.
    expect(oom).toBeInstanceOf(TorchError);
    expect(oom).toMatchObject({ code: "ERR_OUT_OF_MEMORY", name: "OutOfMemoryError" });
    expect(panic).toBeInstanceOf(InternalError);
    expect(cancelled).toBeInstanceOf(CancelledError);
    expect(interrupted).toBeInstanceOf(InterruptedError);
    expect(interrupted).toMatchObject({ checkpoint: "checkpoints/epoch-2", step: 42 });
    expect(io).toBeInstanceOf(FileError);
    expect(io).toMatchObject({ code: "ERR_IO", path: "runs/events", message: "runs/events: permission denied" });
    expect(nonFinite).toBeInstanceOf(NonFiniteError);
    expect(nonFinite).toMatchObject({ step: 7, what: "the training loss of epoch 1 is NaN" });
    expect(checkpoint).toBeInstanceOf(CheckpointError);
    expect(checkpoint).toMatchObject({ checkpoint: "checkpoints/epoch-1", message: "checkpoint checkpoints/epoch-1: trainer.json is missing" });
    expect(data).toBeInstanceOf(DataError);
    expect(data).toMatchObject({ file: "train.txt", line: 12, column: 3, message: "train.txt:12:3: expected qid:<id>" });
    expect(callback).toBeInstanceOf(CallbackError);
    expect(modelDirectory).toBeInstanceOf(ModelDirectoryError);
    expect(modelDirectory).not.toBeInstanceOf(CheckpointError);
    expect(modelDirectory).toMatchObject({
      code: "ERR_MODEL_DIRECTORY",
      file: "models/bert/config.json",
      message: "model directory: models/bert/config.json: no model_type",
    });
    expect(unsupported).toBeInstanceOf(UnsupportedError);
    expect(unsupported!.message).toBe("unsupported: autocast in Int8");
    for (const e of [env, rendezvous, collective]) expect(e).toBeInstanceOf(DistributedError);
    expect(env).toMatchObject({ reason: "environment", variable: "WORLD_SIZE" });
    expect(rendezvous).toMatchObject({ reason: "rendezvous", rank: 1, worldSize: 2, master: "127.0.0.1:29500" });
    expect(collective).toMatchObject({ reason: "collective", rank: 0, worldSize: 3, operation: "all_reduce", deadRanks: [2] });
  });

  it("have one class per code", () => {
    const errors = crossed();
    const codes = errors.map((e) => e.code);
    expect(new Set(codes).size).toBe(codes.length - 2); // three distributed samples share a code
    for (const error of errors) {
      expect(error.constructor).not.toBe(XpmTorchError);
      expect(error.name).toBe(error.constructor.name);
    }
  });
});
