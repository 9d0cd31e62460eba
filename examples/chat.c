/* A conversation with a model through its own chat template: each line on stdin is a user turn;
   the answer streams to stdout. Every turn renders the whole conversation, and the engine's
   prefix cache supplies the KV of the earlier turns, so only the new text is computed.
   usage: chat [MODEL_DIR] */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MESSAGES 64

typedef struct reply {
    char text[8192];
    size_t len;
} reply;

static int on_token(void *user, uint64_t id, int32_t token, const char *text, size_t len) {
    reply *r = (reply *)user;
    (void)id, (void)token;
    fwrite(text, 1, len, stdout); /* final UTF-8 text of this token (possibly empty) */
    fflush(stdout);
    if (len < sizeof r->text - r->len) {
        memcpy(r->text + r->len, text, len);
        r->len += len;
    }
    return 0;
}

static char *copy(const char *s, size_t n) {
    char *p = (char *)malloc(n + 1);
    if (p) memcpy(p, s, n), p[n] = 0;
    return p;
}

int main(int argc, char **argv) {
    mlstack_model_desc md;
    mlstack_engine_desc ed;
    mlstack_model *model;
    mlstack_engine *eng;
    mlstack_error err;
    mlstack_chat_message msgs[MAX_MESSAGES];
    char line[4096], *owned[MAX_MESSAGES];
    int n = 0, i;
    memset(&md, 0, sizeof md);
    md.path = argc > 1 ? argv[1] : "models/smollm2-135m-instruct";
    if (mlstack_model_open(&md, &model, &err) != MLSTACK_OK) return fprintf(stderr, "%s\n", err.message), 1;
    if (!mlstack_model_chat_template(model) || !mlstack_model_tokenizer(model))
        return fprintf(stderr, "%s has no chat template or tokenizer\n", md.path), 1;
    memset(&ed, 0, sizeof ed);
    ed.max_seqs = 1;
    if (mlstack_engine_init(model, &ed, &eng, &err) != MLSTACK_OK) return fprintf(stderr, "%s\n", err.message), 1;
    msgs[n].role = "system", msgs[n].content = "You are a helpful assistant.", owned[n++] = NULL;
    while (n + 2 <= MAX_MESSAGES && fgets(line, sizeof line, stdin)) {
        mlstack_template_options to;
        mlstack_request_desc rd;
        mlstack_request_status st;
        reply r;
        char *prompt;
        size_t prompt_len, n_ids = 0;
        int32_t *ids;
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0]) continue;
        msgs[n].role = "user", msgs[n].content = owned[n] = copy(line, strlen(line)), n++;
        memset(&to, 0, sizeof to);
        to.add_generation_prompt = 1; /* end with the assistant's header: the model answers next */
        if (mlstack_chat_template_apply_messages(mlstack_model_chat_template(model), NULL, msgs, n, &to, &prompt,
                                                 &prompt_len, &err) != MLSTACK_OK)
            return fprintf(stderr, "%s\n", err.message), 1;
        /* the rendered text already holds the special tokens: encode without adding more */
        mlstack_tokenizer_encode(mlstack_model_tokenizer(model), prompt, prompt_len, 0, NULL, 0, &n_ids);
        ids = (int32_t *)malloc(sizeof(int32_t) * (n_ids + 1));
        if (!ids || mlstack_tokenizer_encode(mlstack_model_tokenizer(model), prompt, prompt_len, 0, ids, n_ids, &n_ids))
            return fprintf(stderr, "could not encode the conversation\n"), 1;
        mlstack_template_free_output(prompt);
        memset(&rd, 0, sizeof rd);
        rd.prompt = ids;
        rd.n_prompt = (int)n_ids;
        rd.max_tokens = 256;
        rd.on_token = on_token; /* rd.sampler zero: greedy */
        r.len = 0;
        rd.user = &r;
        if (mlstack_engine_complete(eng, &rd, &st, NULL, 0, &err) != MLSTACK_OK)
            return fprintf(stderr, "%s\n", err.message), 1;
        free(ids);
        printf("\n");
        fflush(stdout); /* the answer, then its numbers on stderr */
        fprintf(stderr, "[%d prompt tokens, %d from the cache, %d generated]\n", st.n_prompt, st.n_cached,
                st.n_generated);
        msgs[n].role = "assistant", msgs[n].content = owned[n] = copy(r.text, r.len), n++;
    }
    for (i = 0; i < n; i++) free(owned[i]);
    mlstack_engine_free(eng);
    mlstack_model_close(model);
    return 0;
}
