/* libcputrain public API: files from the Hugging Face Hub and its cache, as
 * huggingface_hub's hf_hub_download and from_pretrained find them.
 *
 * The cache is huggingface_hub's own layout, so a cache filled by Python
 * serves the library and the reverse: <cache>/models--org--name/ (datasets:
 * datasets--org--name/) holds blobs/<etag> (each file's bytes, named by its
 * ETag: the git blob id, or the sha256 of a large file), snapshots/<commit>/
 * <filename> (relative symlinks to the blobs), refs/<revision> (the commit
 * a branch or tag pointed at when last seen) and .no_exist/<commit>/<file>
 * (a file known to be absent). A download goes to blobs/<etag>.incomplete
 * first and resumes from there; concurrent processes (the ranks of one
 * machine) take .locks/<repo folder>/<etag>.lock so one downloads and the
 * others wait for it.
 *
 * Everything from the network is untrusted: a name from a header or a
 * listing that would leave the cache (an absolute path, "..", a separator
 * in an ETag) is refused, sizes are bounded by what the server announced,
 * and a blob whose ETag is a sha256 is checked against it before it enters
 * the cache.
 * Included through <cputrain/cputrain.h>; do not include directly. */
#ifndef CPUTRAIN_HUB_H
#define CPUTRAIN_HUB_H

#ifndef CT_INSIDE_CPUTRAIN_H
#error "include <cputrain/cputrain.h> instead of <cputrain/hub.h>"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Where and how to look; every option has huggingface_hub's default, read
 * from the environment when the handle is created. NULL where a function
 * takes options means those defaults. */
typedef struct ct_hub_options ct_hub_options;
CT_API ct_status ct_hub_options_create(ct_hub_options **out);
CT_API void ct_hub_options_free(ct_hub_options *options);
/* By huggingface_hub's keyword names, the value as text:
 *   revision          branch, tag or 40-hex commit (default "main")
 *   repo_type         "model" (default) or "dataset"
 *   cache_dir         $HF_HUB_CACHE, else $HF_HOME/hub, else
 *                     $XDG_CACHE_HOME/huggingface/hub, else
 *                     ~/.cache/huggingface/hub
 *   endpoint          $HF_ENDPOINT, else https://huggingface.co (a mirror,
 *                     or a test server: http:// is accepted)
 *   token             $HF_TOKEN, else the first line of $HF_TOKEN_PATH or
 *                     $HF_HOME/token (what `huggingface-cli login` writes),
 *                     line breaks and surrounding blanks removed as
 *                     huggingface_hub does; "" sends none; other control
 *                     characters are refused. Sent to the endpoint's
 *                     scheme, host and port only, never to the file store
 *                     a download is redirected to.
 *   local_files_only  true/false: the cache only, never the network
 *                     (default: $HF_HUB_OFFLINE)
 *   timeout           whole seconds (1..86400) to connect, and of a
 *                     file's transfer moving under 1 KiB/s, before it is
 *                     given up (default $HF_HUB_DOWNLOAD_TIMEOUT, else 10)
 *   etag_timeout      the same for the metadata requests: a file's HEAD,
 *                     a dataset's listing (default $HF_HUB_ETAG_TIMEOUT,
 *                     else 10). Either variable may be 0 (the default, as
 *                     huggingface_hub reads it); anything but whole
 *                     seconds in 0..86400 makes ct_hub_options_create
 *                     fail, naming the variable.
 * An unknown key or a bad value: CT_ERR_INVALID_ARG naming it. */
CT_API ct_status ct_hub_options_set(ct_hub_options *options, const char *key, const char *value);
/* Told of each download's progress: bytes done of total (0 when the
 * server did not say), from the calling thread; done == total at the end.
 * The library prints nothing itself. */
typedef void (*ct_hub_progress_fn)(const char *filename, uint64_t done, uint64_t total,
                                   void *user);
CT_API void ct_hub_options_set_progress(ct_hub_options *options, ct_hub_progress_fn fn,
                                        void *user);

/* hf_hub_download: the local path of `filename` (a path inside the repo,
 * "folder/file.parquet" allowed) of repo `repo_id` ("org/name" or "name")
 * at the options' revision, into path (size bytes): the snapshot's link
 * in the cache, downloaded first when it is not there or its ETag changed.
 * Offline (local_files_only), or when the Hub cannot be reached (logged as
 * a warning), the cached snapshot of the revision serves. Errors name the
 * repo, file and revision: CT_ERR_NOT_FOUND (no such repo, revision or
 * file: HTTP 404; or offline and not cached, saying so), CT_ERR_ACCESS
 * (HTTP 401: private or missing, a token needed; 403: a gated repo, with
 * where to ask for access), CT_ERR_IO (the network, the cache's disk),
 * CT_ERR_FORMAT (a hostile or broken answer: a name outside the cache, a
 * size or checksum that does not match). */
CT_API ct_status ct_hub_download(const char *repo_id, const char *filename,
                                 const ct_hub_options *options, char *path, size_t size);
/* The folder from_pretrained reads for `name_or_path`, into folder (size
 * bytes): an existing local folder as it is; else a Hub model id, whose
 * snapshot is completed in the cache — config.json; the weights in
 * from_pretrained's order (model.safetensors, model.safetensors.index.json
 * and its shards, pytorch_model.bin, pytorch_model.bin.index.json and its
 * shards: the first the repo has); and the tokenizer's files it has
 * (vocab.txt, tokenizer.json, tokenizer_config.json,
 * special_tokens_map.json) — all at one commit. A name that is neither:
 * CT_ERR_NOT_FOUND saying what was tried in which order (local folder,
 * cache, Hub) and what to do. */
CT_API ct_status ct_hub_model_folder(const char *name_or_path, const ct_hub_options *options,
                                     char *folder, size_t size);

/* datasets.load_dataset(name, config, split=split) without Python: the
 * split's rows as one table (its files in name order) from, in turn,
 *  - the datasets library's cache: $HF_DATASETS_CACHE (else
 *    $HF_HOME/datasets, else ~/.cache/huggingface/datasets), the .arrow
 *    files <org>___<name>/<config>/<version>/<hash>/<builder>-<split>[-
 *    NNNNN-of-NNNNN].arrow of the newest <hash> folder;
 *  - the dataset repo's Parquet files through the Hub cache and the Hub
 *    (options as ct_hub_download's; repo_type is "dataset" here): at the
 *    options' revision, <config>/<split>-NNNNN-of-NNNNN.parquet,
 *    <config>/<split>/<file>, data/<split>-* or <split>-* at the root; on
 *    main without any, the refs/convert/parquet export the Hub makes of
 *    datasets defined by a script.
 * Struct columns are flattened to "parent.child" names (as datasets'
 * flatten() names them). `config` NULL: the one configuration there is
 * (several: CT_ERR_NOT_FOUND naming them). CT_ERR_NOT_FOUND names what was
 * looked at; reading errors are ct_table_load's. */
CT_API ct_status ct_table_load_dataset(const char *name, const char *config, const char *split,
                                       const ct_hub_options *options, ct_table **out);

#ifdef __cplusplus
}
#endif
#endif /* CPUTRAIN_HUB_H */
