/* ct_model_config_task: the head a saved folder's config.json names in
 * "architectures", so a folder loads with the head it was saved with. */
#include "model/config.h"
#include "model/model.h"

#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"

ct_status ct_model_config_task(const char *path, ct_task *out)
{
    static const ct__arch archs[2] = {CT__ARCH_BERT, CT__ARCH_DISTILBERT};
    static const ct_task tasks[4] = {CT_TASK_QUESTION_ANSWERING,
                                     CT_TASK_SEQUENCE_CLASSIFICATION, CT_TASK_MASKED_LM,
                                     CT_TASK_TOKEN_CLASSIFICATION};
    char *file;
    ct__json_doc *doc = NULL;
    const ct__json *root, *list, *name;
    ct_status st;

    CT__CHECK_ARG(out);
    CT__CHECK_ARG(path);
    if ((st = ct__file_or_folder(path, "config.json", &file, NULL)) != CT_OK)
        return st;
    if ((st = ct__json_parse_file(file, &doc)) != CT_OK)
        goto done;
    root = ct__json_root(doc);
    list = root->type == CT_JSON_OBJECT ? ct__json_get(root, "architectures") : NULL;
    if (!list || list->type == CT_JSON_NULL) {
        st = ct__error(CT_ERR_NOT_FOUND, "%s: no \"architectures\" names the head; give the "
                       "task explicitly", file);
        goto done;
    }
    if (list->type != CT_JSON_ARRAY || list->n == 0 || list->items[0].type != CT_JSON_STRING) {
        st = ct__error(CT_ERR_FORMAT, "%s: \"architectures\" must be a list of names", file);
        goto done;
    }
    name = &list->items[0];
    for (int a = 0; a < 2; a++)
        for (int k = 0; k < 4; k++)
            if (strcmp(name->str, ct__architecture_name(archs[a], tasks[k])) == 0) {
                *out = tasks[k];
                st = CT_OK;
                goto done;
            }
    st = ct__error(CT_ERR_UNSUPPORTED,
                   "%s: architecture \"%s\" has no head this library trains (Bert or DistilBert "
                   "ForQuestionAnswering, ForSequenceClassification, ForMaskedLM, "
                   "ForTokenClassification); give the "
                   "task explicitly", file, name->str);
done:
    ct__json_free(doc);
    free(file);
    return st;
}
