// The reference side of the tokenizer comparison: Hugging Face's Rust
// `tokenizers` (npm @anush008/tokenizers) set up as BertTokenizerFast sets
// itself up (BertNormalizer, BertPreTokenizer, WordPiece, BertProcessing,
// the special tokens as non-normalized added tokens), run on every case of
// cases.jsonl; compares with the driver's output line by line. Then the
// same again with each configuration's tokenizer.json as libcputrain's
// ct_tokenizer_save wrote it (WORK_DIR/saved/<cfg>/), loaded with
// Tokenizer.fromFile: the file must give the Rust library the tokenizer
// the library encodes with.
//
//   node oracle.js WORK_DIR ACTUAL.txt   (WORK_DIR holds configs.json,
//                                          cases.jsonl and the vocabularies)
// Writes WORK_DIR/expected.txt and expected_saved.txt, prints mismatches
// and a summary line per reference, exits 1 on any mismatch.
"use strict";
const fs = require("fs");
const path = require("path");
const tk = require("@anush008/tokenizers");

const work = process.argv[2];
const actualPath = process.argv[3];

// vocab.txt read as Transformers' load_vocab reads it.
function loadVocab(file) {
  const lines = fs.readFileSync(file, "utf8").split(/\r\n|\r|\n/);
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  const vocab = {};
  lines.forEach((t, i) => { vocab[t] = i; });
  return vocab;
}

const vocabs = {};
function makeTokenizer(cfg) {
  if (!vocabs[cfg.vocab]) vocabs[cfg.vocab] = loadVocab(path.join(work, cfg.vocab));
  const vocab = vocabs[cfg.vocab];
  const t = new tk.Tokenizer(tk.WordPiece.init(vocab, { unkToken: "[UNK]" }));
  const opts = { cleanText: cfg.clean_text, handleChineseChars: cfg.chinese, lowercase: cfg.lowercase };
  if (cfg.strip_accents !== null) opts.stripAccents = cfg.strip_accents;
  t.setNormalizer(tk.bertNormalizer(opts));
  t.setPreTokenizer(tk.bertPreTokenizer());
  t.setPostProcessor(tk.bertProcessing(["[SEP]", vocab["[SEP]"]], ["[CLS]", vocab["[CLS]"]]));
  t.addSpecialTokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]);
  return t;
}

// The line format the C driver writes too.
function format(enc) {
  const windows = [enc, ...enc.getOverflowing()];
  return windows.map((w) => {
    const none = (x) => (x === null || x === undefined ? -1 : x);
    return [
      w.getIds().join(","),
      w.getTypeIds().join(","),
      w.getAttentionMask().join(","),
      w.getSpecialTokensMask().join(","),
      w.getSequenceIds().map(none).join(","),
      w.getWordIds().map(none).join(","),
      w.getOffsets().map((o) => o[0] + ":" + o[1]).join(","),
    ].join(";");
  }).join(" || ");
}

const STRATEGY = { only_second: "OnlySecond", only_first: "OnlyFirst", longest_first: "LongestFirst" };

// Every case's expected line from tokenizers `make(cfgName)` builds
// (plain singles in batches, the rest one by one with their settings).
async function expectedFrom(configs, cases, make) {
  const plain = {};   // tokenizers without truncation or padding, per config
  const expected = new Map();
  const batches = {};
  for (const c of cases) {
    if (c.text !== undefined && c.max === undefined) (batches[c.cfg] = batches[c.cfg] || []).push(c);
  }
  for (const [cfg, list] of Object.entries(batches)) {
    plain[cfg] = plain[cfg] || make(cfg);
    for (let i = 0; i < list.length; i += 2000) {
      const chunk = list.slice(i, i + 2000);
      const encs = await plain[cfg].encodeBatch(chunk.map((c) => c.text));
      chunk.forEach((c, k) => expected.set(c.id, format(encs[k])));
    }
  }
  const special = {};
  for (const c of cases) {
    if (expected.has(c.id)) continue;
    const t = special[c.cfg] = special[c.cfg] || make(c.cfg);
    const pad = vocabs[configs[c.cfg].vocab]["[PAD]"];
    if (c.max && (c.text !== undefined || c.trunc !== "none"))
      t.setTruncation(c.max, { strategy: STRATEGY[c.trunc || "longest_first"], stride: c.stride });
    else
      t.disableTruncation();
    if (c.pad) t.setPadding({ maxLength: c.max, padId: pad, padToken: "[PAD]" });
    else t.disablePadding();
    let line;
    try {
      const enc = c.text !== undefined
        ? await t.encode(c.text, null, { addSpecialTokens: c.special !== false })
        : await t.encode(c.a, c.b);
      line = format(enc);
    } catch (err) {
      line = "ERROR";
    }
    expected.set(c.id, line);
  }
  return expected;
}

// Compare with the driver's lines; prints the mismatches and the summary,
// returns the number of mismatches.
function compare(what, cases, expected, actual) {
  let passed = 0, failed = 0, windows = 0, tokens = 0, singles = 0, pairs = 0;
  const byCfg = {};
  for (const c of cases) {
    const want = expected.get(c.id), got = actual.get(c.id);
    byCfg[c.cfg] = byCfg[c.cfg] || [0, 0];
    if (want === got) {
      passed++;
      byCfg[c.cfg][0]++;
      if (c.text !== undefined) singles++; else pairs++;
      if (want !== "ERROR") {
        const ws = want.split(" || ");
        windows += ws.length;
        for (const w of ws) tokens += w.split(";")[0].split(",").filter((x) => x.length).length;
      }
      continue;
    }
    failed++;
    byCfg[c.cfg][1]++;
    if (failed <= 15) {
      console.log("MISMATCH (" + what + ") " + c.id + " input " +
        JSON.stringify(c.text !== undefined ? c.text : [c.a, c.b]));
      console.log("  expected " + want);
      console.log("  actual   " + got);
    }
  }
  for (const [cfg, [p, f]] of Object.entries(byCfg))
    console.log("  " + cfg + ": " + p + " matched" + (f ? ", " + f + " MISMATCHED" : ""));
  console.log("tokenizer oracle (" + what + "): " + cases.length + " cases (" + singles +
    " single texts and " + pairs + " pairs matched), " + windows + " windows, " + tokens +
    " tokens compared (ids, type ids, attention, special mask, sequence ids, word ids, offsets)");
  console.log("oracle (" + what + "): " + passed + " passed, " + failed + " failed");
  return failed;
}

async function main() {
  const configs = JSON.parse(fs.readFileSync(path.join(work, "configs.json"), "utf8"));
  const cases = fs.readFileSync(path.join(work, "cases.jsonl"), "utf8")
    .split("\n").filter((l) => l.length).map((l) => JSON.parse(l));
  const actual = new Map();
  for (const line of fs.readFileSync(actualPath, "utf8").split("\n")) {
    const tab = line.indexOf("\t");
    if (tab > 0) actual.set(line.slice(0, tab), line.slice(tab + 1));
  }
  const write = (name, expected) => fs.writeFileSync(path.join(work, name),
    cases.map((c) => c.id + "\t" + expected.get(c.id)).join("\n") + "\n");

  // The reference built by hand, as BertTokenizerFast sets itself up.
  const built = await expectedFrom(configs, cases, (cfg) => makeTokenizer(configs[cfg]));
  write("expected.txt", built);
  let failed = compare("built", cases, built, actual);

  // The tokenizer.json files the library saved, as the Rust library reads them.
  const saved = await expectedFrom(configs, cases, (cfg) =>
    tk.Tokenizer.fromFile(path.join(work, "saved", cfg, "tokenizer.json")));
  write("expected_saved.txt", saved);
  failed += compare("saved tokenizer.json", cases, saved, actual);
  process.exit(failed === 0 ? 0 : 1);
}

main().catch((err) => { console.error(err); process.exit(2); });
