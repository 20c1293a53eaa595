#!/usr/bin/env node
// Writes a text ranking data set in the MS MARCO layout whose every training negative is hard,
// the same for every machine:
//   collection.tsv, queries.train.tsv, queries.dev.tsv, triples.train.tsv (ids), qrels.dev.tsv,
//   run.dev.trec, and the training triplets as a run to re-rank: qrels.train.tsv (each training
//   query's positive) and run.train.trec (its positive and its three negatives), for slates
// The world is invented: made-up entities (countries, rivers, people...) each with a value for
// every attribute of its kind, all words of no language, so the pretrained model knows none of
// the answers. A passage states one attribute of one entity in one template sentence ("The
// capital of Velmora is Ostrik, ...") followed by a few invented filler words. A query asks for
// one attribute of one entity; its hard negatives are the same entity's other attributes and the
// same attribute of other entities of the kind, which share most of the query's words with the
// positive. Each training query has one positive and three hard negatives, written as three
// consecutive triplet lines. Dev queries are entity-attribute pairs no training query asks, each
// with the positive among `depth` candidates. Ids are decimal: passages from 0, queries from 1.
//
// With --long, a passage is MS MARCO-length (650 to 1,500 characters): the answering sentence
// sits at a random place among statements about other entities and attributes, so a pair
// overflows max_length 128 and the answer is sometimes truncated away.
//
// Usage: node benchmarks/hard-negatives-data.mjs <out dir> [--dev-queries 100] [--depth 20] [--long]
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { rng, shuffle } from "./text-ranking-data.mjs";

/** Kinds of entity, their attributes and the sentence that states each (X: entity, Y: value). */
const KINDS = [
  {
    kind: "country",
    count: 60,
    attributes: [
      ["capital", "The capital of X is Y"],
      ["currency", "The currency of X is the Y"],
      ["national dish", "The national dish of X is Y"],
      ["highest mountain", "The highest mountain of X is Mount Y"],
      ["official language", "The official language of X is Y"],
      ["national animal", "The national animal of X is the Y"],
    ],
  },
  {
    kind: "river",
    count: 30,
    attributes: [
      ["source", "The source of the X river is near Y"],
      ["mouth", "The X river flows into the Y"],
      ["largest tributary", "The largest tributary of the X river is the Y"],
      ["oldest bridge", "The oldest bridge over the X river is the Y bridge"],
    ],
  },
  {
    kind: "person",
    count: 40,
    attributes: [
      ["birthplace", "X was born in Y"],
      ["profession", "X worked as a Y"],
      ["best known work", "The best known work of X is Y"],
      ["teacher", "The teacher of X was Y"],
      ["spouse", "X was married to Y"],
    ],
  },
];
const SYLLABLES = "ka ve lo mir sta ran tho vel ik dun sor pa ne gri ul zan mo fe rik ast bel cho ty ven dra".split(" ");

/** Distinct invented words of 2 to 4 syllables. */
function wordMaker(random) {
  const used = new Set();
  return (capitalised = true) => {
    for (;;) {
      const n = 2 + Math.floor(random() * 3);
      const word = Array.from({ length: n }, () => SYLLABLES[Math.floor(random() * SYLLABLES.length)]).join("");
      if (used.has(word)) continue;
      used.add(word);
      return capitalised ? word[0].toUpperCase() + word.slice(1) : word;
    }
  };
}

function options(args) {
  const get = (name, fallback) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? Number(args[i + 1]) : fallback;
  };
  return { devQueries: get("dev-queries", 100), depth: get("depth", 20), long: args.includes("--long") };
}

export function generate(out, { devQueries = 100, depth = 20, long = false } = {}) {
  const random = rng(20261204);
  const word = wordMaker(random);
  const filler = Array.from({ length: 200 }, () => word(false));
  const fillerWords = (min, max) =>
    Array.from({ length: min + Math.floor(random() * (max - min + 1)) }, () => filler[Math.floor(random() * filler.length)]).join(" ");
  // Facts: one per (entity, attribute), each stated by its kind's sentence.
  const facts = [];
  for (const { kind, count, attributes } of KINDS) {
    for (let e = 0; e < count; e++) {
      const entity = word();
      for (const [attribute, template] of attributes) {
        facts.push({ kind, entity, attribute, sentence: template.replace("X", entity).replace("Y", word()) });
      }
    }
  }
  const statement = (fact) => `${fact.sentence}, ${fillerWords(1, 6)}.`;
  const passages = facts.map((fact) => {
    if (!long) return statement(fact);
    const target = 600 + Math.floor(random() * 600);
    const sentences = [];
    for (let length = 0; length < target; length += sentences[sentences.length - 1].length + 1) {
      const other = facts[Math.floor(random() * facts.length)];
      sentences.push(other !== fact && random() < 0.6 ? statement(other) : `${fillerWords(6, 14)}.`);
    }
    sentences.splice(Math.floor(random() * (sentences.length + 1)), 0, statement(fact));
    return sentences.join(" ");
  });
  // Passage ids follow a shuffled order of the facts, so that an id says nothing of its fact.
  const ids = shuffle(facts.map((_, i) => i), random);
  const idOf = new Map(facts.map((f, i) => [f, ids[i]]));
  const hard = (fact) =>
    facts.filter((f) => f !== fact && f.kind === fact.kind && (f.entity === fact.entity || f.attribute === fact.attribute));
  const askable = shuffle(facts, random);
  const dev = askable.slice(0, devQueries);
  const train = askable.slice(devQueries);
  const query = (f) => `what is the ${f.attribute} of ${f.entity}`;
  const lines = (rows) => rows.map((r) => r.join("\t")).join("\n") + "\n";
  const byId = [];
  facts.forEach((f, i) => (byId[ids[i]] = passages[i]));
  writeFileSync(join(out, "collection.tsv"), lines(byId.map((p, id) => [id, p])));
  writeFileSync(join(out, "queries.train.tsv"), lines(train.map((f, i) => [1 + i, query(f)])));
  const devId = (i) => 1 + train.length + i;
  writeFileSync(join(out, "queries.dev.tsv"), lines(dev.map((f, i) => [devId(i), query(f)])));
  const triples = train.flatMap((f, i) => shuffle(hard(f), random).slice(0, 3).map((n) => [1 + i, idOf.get(f), idOf.get(n)]));
  writeFileSync(join(out, "triples.train.tsv"), lines(triples));
  // The same triplets as judged candidates, with no draw of their own (the other files stay as
  // they were): a query's positive ranked first, then its negatives in their triplets' order.
  const trainRun = new Map();
  for (const [qid, positive, negative] of triples) trainRun.set(qid, [...(trainRun.get(qid) ?? [positive]), negative]);
  writeFileSync(join(out, "qrels.train.tsv"), [...trainRun].map(([qid, [positive]]) => `${qid} 0 ${positive} 1`).join("\n") + "\n");
  const runLines = [...trainRun].flatMap(([qid, docs]) => docs.map((doc, rank) => `${qid} Q0 ${doc} ${rank + 1} ${(100 - rank).toFixed(2)} triplets`));
  writeFileSync(join(out, "run.train.trec"), runLines.join("\n") + "\n");
  const qrels = [];
  const run = [];
  dev.forEach((f, i) => {
    qrels.push(`${devId(i)} 0 ${idOf.get(f)} 1`);
    const candidates = shuffle([f, ...shuffle(hard(f), random).slice(0, depth - 1)], random);
    candidates.forEach((c, rank) => run.push(`${devId(i)} Q0 ${idOf.get(c)} ${rank + 1} ${(100 - rank).toFixed(2)} synthetic`));
  });
  writeFileSync(join(out, "qrels.dev.tsv"), qrels.join("\n") + "\n");
  writeFileSync(join(out, "run.dev.trec"), run.join("\n") + "\n");
  const chars = passages.map((p) => p.length);
  return {
    passages: passages.length,
    passageChars: [Math.min(...chars), Math.max(...chars)],
    trainQueries: train.length,
    devQueries: dev.length,
    triples: triples.length,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [out, ...rest] = process.argv.slice(2);
  if (!out) {
    console.error("usage: node benchmarks/hard-negatives-data.mjs <out dir> [--dev-queries N] [--depth N] [--long]");
    process.exit(2);
  }
  mkdirSync(out, { recursive: true });
  console.log(JSON.stringify(generate(out, options(rest))));
}
