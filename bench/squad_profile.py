#!/usr/bin/python3
"""Writes a SQuAD v1.1-format training file with SQuAD's length profile, for
timing question-answering training (bench/compare_squad.sh), not for
learning: the text is words of a real vocabulary in random order.

  paragraphs  log-normal word counts, median 115, sigma 0.45, clipped to
              [20, 600] (SQuAD v1.1 train: median ~110-120 words, a long tail)
  questions   5-17 words, 5 per paragraph, ending in "?"
  answers     a span of 1-6 words of the paragraph (SQuAD's median is ~2-3)

Words are drawn from the whole-word entries of the vocabulary (bert-base-
uncased's vocab.txt: its ids run roughly by frequency, so a Zipf law over
them gives common words most often); about one word in eight is a word
glued to a "##" continuation piece, so it tokenizes into two or more pieces,
and sentences carry commas and full stops: about 1.2-1.3 tokens per word,
as SQuAD has with this vocabulary. The token counts are printed (a greedy
WordPiece, as BERT's for lower-case ASCII text), so the figures can be
checked.

usage: squad_profile.py VOCAB_TXT OUT_DIR [--paragraphs 80] [--seed 1]
writes OUT_DIR/train.json, OUT_DIR/vocab.txt, OUT_DIR/tokenizer_config.json"""
import argparse
import bisect
import itertools
import json
import math
import os
import random
import re
import shutil
import statistics


def load_vocab(path):
    with open(path, encoding="utf-8") as f:
        tokens = [line.rstrip("\n") for line in f]
    words = [t for t in tokens if re.fullmatch(r"[a-z]{2,}", t)]
    pieces = [t for t in tokens if re.fullmatch(r"##[a-z]{2,}", t)]
    return set(tokens), words, pieces


def zipf_sampler(rng, items, s=1.0, offset=10):
    cumulative = list(itertools.accumulate(1.0 / (i + offset) ** s for i in range(len(items))))
    total = cumulative[-1]
    return lambda: items[bisect.bisect_left(cumulative, rng.random() * total)]


def wordpiece_count(word, vocab):
    """Pieces of one lower-case word under greedy longest-match-first."""
    n, start = 0, 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
            end -= 1
        if end == start:
            return 1  # [UNK]
        n += 1
        start = end
    return n


def token_count(text, vocab):
    return sum(1 if not w.isalnum() else wordpiece_count(w, vocab)
               for w in re.findall(r"[a-z0-9]+|[^\sa-z0-9]", text.lower()))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("vocab")
    p.add_argument("out")
    p.add_argument("--paragraphs", type=int, default=80)
    p.add_argument("--questions", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    rng = random.Random(a.seed)
    vocab, words, pieces = load_vocab(a.vocab)
    word = zipf_sampler(rng, words)
    piece = zipf_sampler(rng, pieces)

    def one_word():
        w = word()
        return w + piece()[2:] if rng.random() < 0.125 else w

    def sentence_words(n):
        out = []
        while len(out) < n:
            out.append(one_word())
        return out

    def text_of(ws):
        """Sentences of 8-30 words: capitalised, commas, full stops."""
        out, i = [], 0
        while i < len(ws):
            n = rng.randint(8, 30)
            chunk = ws[i:i + n]
            chunk[0] = chunk[0].capitalize()
            for j in range(len(chunk) - 1):
                if rng.random() < 0.07:
                    chunk[j] += ","
            out.append(" ".join(chunk) + ".")
            i += n
        return " ".join(out)

    data, para_words, para_tokens, q_tokens = [], [], [], []
    qid = 0
    for pi in range(a.paragraphs):
        n = int(round(math.exp(math.log(115) + 0.45 * rng.gauss(0, 1))))
        n = min(600, max(20, n))
        context = text_of(sentence_words(n))
        spans = [(m.start(), m.end()) for m in re.finditer(r"[A-Za-z]+", context)]
        para_words.append(len(spans))
        para_tokens.append(token_count(context, vocab))
        qas = []
        for _ in range(a.questions):
            k = rng.randint(1, 6)
            first = rng.randrange(0, len(spans) - k + 1)
            start, end = spans[first][0], spans[first + k - 1][1]
            q = sentence_words(rng.randint(5, 17))
            question = " ".join([q[0].capitalize()] + q[1:]) + "?"
            q_tokens.append(token_count(question, vocab))
            qas.append({"id": "q%06d" % qid, "question": question,
                        "answers": [{"text": context[start:end], "answer_start": start}]})
            qid += 1
        data.append({"title": "profile_%d" % pi, "paragraphs": [{"context": context, "qas": qas}]})

    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "train.json"), "w", encoding="utf-8") as f:
        json.dump({"version": "1.1", "data": data}, f)
    shutil.copyfile(a.vocab, os.path.join(a.out, "vocab.txt"))
    with open(os.path.join(a.out, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True, "tokenizer_class": "BertTokenizer"}, f)

    def q(xs, f):
        return sorted(xs)[min(len(xs) - 1, int(f * len(xs)))]
    print("squad profile: %d paragraphs x %d questions; paragraph words median %d (p10 %d, "
          "p90 %d, max %d), tokens median %d (p90 %d, max %d, %.2f per word); question tokens "
          "median %d" % (a.paragraphs, a.questions, statistics.median(para_words),
                         q(para_words, 0.1), q(para_words, 0.9), max(para_words),
                         statistics.median(para_tokens), q(para_tokens, 0.9), max(para_tokens),
                         sum(para_tokens) / sum(para_words), statistics.median(q_tokens)))


if __name__ == "__main__":
    main()
