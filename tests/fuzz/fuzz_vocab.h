/* A small fixed WordPiece vocabulary for the harnesses that need a
 * tokenizer but fuzz something else (SQuAD features, encoding): special
 * tokens, single characters and their ## pieces, a few whole words, so
 * texts tokenize into real pieces rather than all [UNK]. */
#ifndef CT_FUZZ_VOCAB_H
#define CT_FUZZ_VOCAB_H

#include "fuzz_common.h"

static const char *const fz_words[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "of", "in", "is", "was", "who",
    "what", "when", "where", "normans", "normandy", "france", "rollo", "ruler", "first", "region",
    "people", "name", "gave", "their", "visited", "zurich", "zoe", "caf", "##e", "##s", "##ing",
    "##ed", "un", "##aff", "##able", "2019", "10th", "\xe4\xb8\xad", "\xe6\x96\x87", "\xc3\xa9",
    ".", ",", "?", "!", "'", "\"", "-", "(", ")", ":", ";", "/", "$", "%", "&"};

/* The tokenizer over that vocabulary, loaded once per process (never
 * freed: it is shared by every input and does not change). */
static inline ct_tokenizer *fz_tokenizer(void)
{
    static ct_tokenizer *tok;
    if (!tok) {
        char line[8], *text = NULL;
        size_t i, len = 0;
        FILE *mem = open_memstream(&text, &len);
        FZ_CHECK(mem != NULL, "open_memstream");
        for (i = 0; i < sizeof fz_words / sizeof fz_words[0]; i++)
            fprintf(mem, "%s\n", fz_words[i]);
        for (i = 0; i < 36; i++) { /* a-z, 0-9 and their continuations */
            char c = (char)(i < 26 ? 'a' + i : '0' + (i - 26));
            snprintf(line, sizeof line, "%c\n##%c\n", c, c);
            fputs(line, mem);
        }
        fclose(mem);
        fz_write("vocab.txt", text, len);
        free(text);
        FZ_CHECK(ct_tokenizer_load(fz_path("vocab.txt"), &tok) == CT_OK, "fixed vocabulary");
    }
    return tok;
}

#endif
