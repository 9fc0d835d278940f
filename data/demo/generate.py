#!/usr/bin/python3
"""Generates the built-in demo of libcputrain: a small SQuAD v1.1-format
question-answering dataset about invented people, a WordPiece vocabulary
built from it, and a small BERT configuration to train from scratch.

Every paragraph states facts about one invented person; questions ask for
one fact, phrased several ways. Train and validation share no person, so a
model has to learn where answers sit, not memorise them. Each paragraph
also holds a distractor of the same kind (a second city, a second year), so
the question's wording matters. Deterministic: the same seed gives the same
files, byte for byte.

usage: generate.py OUT_DIR [--seed 1234] [--train-people 700] [--eval-people 120]
writes OUT_DIR/train.json, validation.json, vocab.txt, config.json,
tokenizer_config.json"""
import argparse
import json
import os
import random

SYLLABLES = ("ka", "lo", "mi", "ren", "dor", "vel", "sa", "tin", "mar", "ob", "el", "qui",
             "zan", "ro", "fe", "gal", "ith", "un", "por", "bex", "la", "nor", "cy", "ves")
CITIES = ("Ostavia", "Brennmark", "Calloway", "Duvessa", "Eskerby", "Farrowdale", "Glimmering",
          "Harthaven", "Istrava", "Jorvik", "Kelloran", "Lunmouth", "Merrowick", "Northfall",
          "Orland", "Pellmoor", "Quarrystone", "Rivenhold", "Saltmere", "Thornbury",
          "Umberlee", "Valcrest", "Westergate", "Yarrowfield")
JOBS = ("glassblower", "cartographer", "beekeeper", "clockmaker", "astronomer", "ferryman",
        "bookbinder", "shipwright", "herbalist", "stonemason", "luthier", "weaver",
        "apothecary", "lighthouse keeper", "tanner", "falconer")
COLORS = ("amber", "crimson", "teal", "violet", "ochre", "silver", "emerald", "indigo",
          "scarlet", "ivory")
ANIMALS = ("heron", "lynx", "otter", "badger", "falcon", "tortoise", "fox", "raven",
           "stag", "salamander")

# Each fact: the sentence(s) stating it, and questions asking for it.
QUESTIONS = {
    "birthplace": ("Where was {n} born?", "In which city was {n} born?",
                   "What is the birthplace of {n}?", "{n} was born in which town?"),
    "move": ("Where did {n} move to?", "To which city did {n} move later?",
             "Which town did {n} settle in?"),
    "year": ("When was {n} born?", "In what year was {n} born?",
             "What year was {n} born in?"),
    "job": ("What did {n} work as?", "What was the profession of {n}?",
            "What was {n}'s trade?", "Which occupation did {n} have?"),
    "color": ("What was the favorite color of {n}?", "Which color did {n} like best?"),
    "animal": ("What animal did {n} keep?", "Which pet did {n} have?"),
}


def person_name(rng, used):
    while True:
        first = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()
        last = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()
        name = first + " " + last
        if name not in used:
            used.add(name)
            return name


def paragraph(rng, name):
    born, moved = rng.sample(CITIES, 2)
    year, other_year = rng.sample(range(1700, 1950), 2)
    facts = {"birthplace": born, "move": moved, "year": str(year), "job": rng.choice(JOBS),
             "color": rng.choice(COLORS), "animal": rng.choice(ANIMALS)}
    sentences = [
        "{n} was born in {birthplace} in {year}.",
        "Later, {n} moved to {move}, where a library opened in " + str(other_year) + ".",
        "By trade {n} was a {job}.",
        "The favorite color of {n} was {color}.",
        "{n} kept a {animal} at home.",
    ]
    first, rest = sentences[:2], sentences[2:]
    rng.shuffle(rest)
    text = " ".join(s.format(n=name, **facts) for s in first + rest)
    return text, facts


def answer_start(context, fact, value, name):
    """Character offset of the value as stated for this fact."""
    anchors = {"birthplace": name + " was born in ", "year": " in ",
               "move": "moved to ", "job": " was a ", "color": " was ", "animal": " kept a "}
    if fact == "year":
        start = context.index(name + " was born in ")
        return context.index(value, start)
    if fact == "color":
        return context.index(value, context.index("favorite color of"))
    return context.index(anchors[fact] + value) + len(anchors[fact])


def make_split(rng, people, used, title_prefix):
    data, counter = [], 0
    for p in range(people):
        name = person_name(rng, used)
        context, facts = paragraph(rng, name)
        qas = []
        for fact, value in facts.items():
            template = rng.choice(QUESTIONS[fact])
            start = answer_start(context, fact, value, name)
            assert context[start:start + len(value)] == value
            qas.append({"id": "%s-%05d" % (title_prefix, counter),
                        "question": template.format(n=name),
                        "answers": [{"text": value, "answer_start": start}]})
            counter += 1
        data.append({"title": name, "paragraphs": [{"context": context, "qas": qas}]})
    return {"version": "1.1", "data": data}


def words(text):
    """Lowercased words and punctuation marks, as BERT's pre-tokenizer splits."""
    out, cur = [], ""
    for ch in text.lower():
        if ch.isalnum():
            cur += ch
        else:
            if cur:
                out.append(cur)
                cur = ""
            if not ch.isspace():
                out.append(ch)
    if cur:
        out.append(cur)
    return out


def build_vocab(splits):
    """Special tokens, every word of the data except the people's names,
    then the syllables the names are made of (and their ## forms): every
    name, seen or not, splits into the same kind of pieces, so what the
    model learns about names carries over to people it has never seen."""
    seen, vocab = set(), ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    names = {w.lower() for split in splits for article in split["data"]
             for w in article["title"].split()}
    for split in splits:
        for article in split["data"]:
            for para in article["paragraphs"]:
                texts = [para["context"]] + [q["question"] for q in para["qas"]]
                for t in texts:
                    for w in words(t):
                        if w not in names:
                            seen.add(w)
    pieces = set(SYLLABLES) | {"##" + s for s in SYLLABLES} | {c for c in "0123456789"} | \
        {"##" + c for c in "0123456789"}
    for tok in sorted(seen) + sorted(pieces - seen):
        if tok not in vocab:
            vocab.append(tok)
    return vocab


def baselines(train, validation):
    """Exact match of two answer-free strategies, to read the model's score
    against: the context's first word, and the training set's most common
    answer for the question's kind of fact."""
    def kind(question):
        for fact, templates in QUESTIONS.items():
            for t in templates:
                head = t.split("{n}")[0]
                if head and question.startswith(head):
                    return fact
                tail = t.split("{n}")[1]
                if not head and question.endswith(tail):
                    return fact
        return None

    def qas(split):
        for article in split["data"]:
            for para in article["paragraphs"]:
                for q in para["qas"]:
                    yield para["context"], q

    common = {}
    for _, q in qas(train):
        counts = common.setdefault(kind(q["question"]), {})
        answer = q["answers"][0]["text"]
        counts[answer] = counts.get(answer, 0) + 1
    first = majority = total = 0
    for context, q in qas(validation):
        gold = q["answers"][0]["text"]
        counts = common.get(kind(q["question"]), {"": 1})
        first += context.split()[0] == gold
        majority += max(counts, key=counts.get) == gold
        total += 1
    return 100.0 * first / total, 100.0 * majority / total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--train-people", type=int, default=700)
    ap.add_argument("--eval-people", type=int, default=120)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    used = set()
    train = make_split(rng, a.train_people, used, "train")
    validation = make_split(rng, a.eval_people, used, "validation")
    os.makedirs(a.out, exist_ok=True)
    # The vocabulary comes from the training text only, as a real one would.
    vocab = build_vocab([train])
    files = {
        "train.json": json.dumps(train, indent=1, ensure_ascii=False) + "\n",
        "validation.json": json.dumps(validation, indent=1, ensure_ascii=False) + "\n",
        "vocab.txt": "\n".join(vocab) + "\n",
        "tokenizer_config.json": json.dumps({"do_lower_case": True, "model_max_length": 128,
                                             "tokenizer_class": "BertTokenizer"}, indent=2) + "\n",
        "config.json": json.dumps({
            "architectures": ["BertForQuestionAnswering"], "model_type": "bert",
            "vocab_size": len(vocab), "hidden_size": 128, "num_hidden_layers": 2,
            "num_attention_heads": 4, "intermediate_size": 512, "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
            "max_position_embeddings": 128, "type_vocab_size": 2, "initializer_range": 0.02,
            "layer_norm_eps": 1e-12, "pad_token_id": 0}, indent=2, sort_keys=True) + "\n",
    }
    for name, text in files.items():
        with open(os.path.join(a.out, name), "w", encoding="utf-8") as f:
            f.write(text)
    print("trivial baselines on validation (exact match): first word of the context %.1f%%, "
          "most common training answer of the question's kind %.1f%%"
          % baselines(train, validation))
    print("demo data: %d train and %d validation questions, vocabulary of %d tokens in %s"
          % (sum(len(p["qas"]) for d in train["data"] for p in d["paragraphs"]),
             sum(len(p["qas"]) for d in validation["data"] for p in d["paragraphs"]),
             len(vocab), a.out))


if __name__ == "__main__":
    main()
