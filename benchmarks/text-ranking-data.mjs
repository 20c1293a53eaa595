#!/usr/bin/env node
// Writes a text ranking data set in the MS MARCO layout, the same for every seed and machine:
//   collection.tsv, queries.train.tsv, queries.dev.tsv, triples.train.tsv (ids), qrels.dev.tsv,
//   run.dev.trec
// Queries ask for one attribute of one entity ("what is the climate of lisbon"); each has one
// relevant passage (that entity, that attribute). Its candidates and training negatives are the
// hard ones: the same entity's other attributes and the same attribute of other entities. Dev
// queries are entity-attribute combinations no training query asks, so the model must learn to
// match both parts rather than remember pairs.
//
// With --long, passages are MS MARCO-like in length: the attribute's sentence sits at a random
// place among 6 to 14 sentences that name other cities and other attributes, so pairs fill
// max_length 128 and some lose the sentence that answers to truncation.
//
// Usage: node benchmarks/text-ranking-data.mjs <out dir> [--dev-queries 100] [--depth 20] [--triples 4000] [--long]
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const ENTITIES = (
  "lisbon oslo nairobi lima hanoi quito dakar perth boston seville kyoto cairo tunis " +
  "havana porto riga minsk sofia zagreb bergen tallinn vilnius krakow lyon geneva " +
  "glasgow dublin cardiff leeds bristol malaga bilbao naples turin verona bologna " +
  "salzburg graz brno ghent"
).split(" ");
const ATTRIBUTES = [
  ["climate", ["mild and wet", "hot and dry", "cold in winter", "humid all year"]],
  ["population", ["about two million people", "under half a million people", "nearly one million residents"]],
  ["main river", ["a wide slow river", "a short mountain river", "two rivers that meet downtown"]],
  ["oldest building", ["a stone church from the twelfth century", "a roman wall", "a medieval castle"]],
  ["football club", ["a club founded in 1902", "two rival clubs", "a club that plays in red"]],
  ["airport", ["an airport twenty minutes from the centre", "a small regional airport", "a large hub airport"]],
  ["university", ["a university founded in the fifteenth century", "a young technical university", "three universities"]],
  ["local dish", ["a fish stew with saffron", "fried dough with honey", "slow cooked lamb with beans"]],
  ["festival", ["a summer music festival", "a winter light festival", "a film festival in spring"]],
  ["main industry", ["shipbuilding", "banking and insurance", "textiles", "software and services"]],
  ["tallest tower", ["a television tower", "an office tower of forty floors", "a bell tower"]],
  ["largest park", ["a park along the river", "a forest park on a hill", "gardens around the old palace"]],
  ["mayor", ["a mayor elected in 2019", "a former teacher", "a mayor serving a third term"]],
  ["public transport", ["trams and buses", "a metro with three lines", "buses and a funicular"]],
  ["museum", ["a museum of modern art", "a maritime museum", "a natural history museum"]],
  ["bridge", ["a suspension bridge", "an old stone bridge", "a bridge that opens for ships"]],
  ["market", ["a covered food market", "a flea market on sundays", "a flower market by the harbour"]],
  ["dialect", ["a dialect with soft consonants", "a dialect close to the standard language", "a dialect known for long vowels"]],
  ["twin town", ["a twin town across the sea", "two twin towns in asia", "a twin town founded the same year"]],
  ["elevation", ["near sea level", "about five hundred metres above the sea", "on a high plateau"]],
];
const FILLER = [
  "visitors often arrive by train",
  "the old town is small and easy to walk",
  "many tourists come in the summer months",
  "the city has changed a lot in recent decades",
  "local guides tell many stories about its past",
  "the streets are busy on weekday mornings",
  "prices are lower outside the centre",
  "the harbour area was rebuilt after the war",
];

/** A seeded generator of uniform numbers in [0, 1) (mulberry32), the same on every machine. */
export function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A shuffled copy of `items`. */
export function shuffle(items, random) {
  const a = [...items];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

function options(args) {
  const get = (name, fallback) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? Number(args[i + 1]) : fallback;
  };
  return {
    devQueries: get("dev-queries", 100),
    depth: get("depth", 20),
    triples: get("triples", 4000),
    long: args.includes("--long"),
  };
}

/** A sentence that names another city or another attribute, without the answer to any query. */
function distractor(entity, attribute, pick) {
  const templates = [
    () => `many compare it with ${pick(ENTITIES)} because of its ${pick(ATTRIBUTES)[0]}`,
    () => `a guide to ${pick(ENTITIES)} describes the ${pick(ATTRIBUTES)[0]} there at length`,
    () => `people in ${entity} often talk about the ${pick(ATTRIBUTES.filter(([a]) => a !== attribute))[0]}`,
    () => `the ${pick(ATTRIBUTES)[0]} of the region around ${entity} is described in many books`,
    () => pick(FILLER),
  ];
  return pick(templates)();
}

/** A long passage: the answering sentence at a random place among 6 to 14 others. */
function longPassage(entity, attribute, value, random, pick) {
  const count = 6 + Math.floor(random() * 9);
  const sentences = Array.from({ length: count }, () => distractor(entity, attribute, pick));
  sentences.splice(Math.floor(random() * (count + 1)), 0, `the ${attribute} of ${entity} is ${value}`);
  return `${entity} is a city many people visit. ${sentences.join(". ")}.`;
}

export function generate(out, { devQueries = 100, depth = 20, triples = 4000, long = false } = {}) {
  const random = rng(20261203);
  const pick = (items) => items[Math.floor(random() * items.length)];
  mkdirSync(out, { recursive: true });
  // One passage per (entity, attribute): the entity, the attribute's value, and filler.
  const passages = [];
  const passageOf = new Map();
  for (const entity of ENTITIES) {
    for (const [attribute, values] of ATTRIBUTES) {
      let text;
      if (long) {
        text = longPassage(entity, attribute, pick(values), random, pick);
      } else {
        const filler = shuffle(FILLER, random).slice(0, 3);
        text = `${entity} is a city many people visit. its ${attribute} is ${pick(values)}. ${filler.join(". ")}.`;
      }
      passageOf.set(`${entity}|${attribute}`, passages.length);
      passages.push(text);
    }
  }
  const combos = shuffle(
    ENTITIES.flatMap((e) => ATTRIBUTES.map(([a]) => [e, a])),
    random,
  );
  const dev = combos.slice(0, devQueries);
  const train = combos.slice(devQueries);
  const query = ([e, a]) => `what is the ${a} of ${e}`;
  /** The hard candidates of a query: the entity's other attributes, the attribute's other entities. */
  const hard = ([e, a]) => [
    ...ATTRIBUTES.filter(([b]) => b !== a).map(([b]) => passageOf.get(`${e}|${b}`)),
    ...ENTITIES.filter((f) => f !== e).map((f) => passageOf.get(`${f}|${a}`)),
  ];
  const lines = (rows) => rows.map((r) => r.join("\t")).join("\n") + "\n";
  writeFileSync(join(out, "collection.tsv"), lines(passages.map((p, i) => [i, p])));
  writeFileSync(join(out, "queries.train.tsv"), lines(train.map((c, i) => [1000 + i, query(c)])));
  writeFileSync(join(out, "queries.dev.tsv"), lines(dev.map((c, i) => [100000 + i, query(c)])));
  const tripleRows = Array.from({ length: triples }, () => {
    const i = Math.floor(random() * train.length);
    const c = train[i];
    return [1000 + i, passageOf.get(c.join("|")), pick(hard(c))];
  });
  writeFileSync(join(out, "triples.train.tsv"), lines(tripleRows));
  const qrels = [];
  const run = [];
  dev.forEach((c, i) => {
    const qid = 100000 + i;
    const positive = passageOf.get(c.join("|"));
    qrels.push(`${qid} 0 ${positive} 1`);
    const candidates = shuffle([positive, ...shuffle(hard(c), random).slice(0, depth - 1)], random);
    candidates.forEach((doc, rank) => run.push(`${qid} Q0 ${doc} ${rank + 1} ${(100 - rank).toFixed(2)} synthetic`));
  });
  writeFileSync(join(out, "qrels.dev.tsv"), qrels.join("\n") + "\n");
  writeFileSync(join(out, "run.dev.trec"), run.join("\n") + "\n");
  return { passages: passages.length, trainQueries: train.length, devQueries: dev.length, triples };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [out, ...rest] = process.argv.slice(2);
  if (!out) {
    console.error("usage: node benchmarks/text-ranking-data.mjs <out dir> [--dev-queries N] [--depth N] [--triples N] [--long]");
    process.exit(2);
  }
  console.log(JSON.stringify(generate(out, options(rest))));
}
