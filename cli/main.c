/* mlstack command-line tool: main() and the command table. Each command lives in its own file
   (cli.h lists them) behind one entry signature; main reads the options that every command takes
   (--ranks, --stages, --rank-mode: cli_mesh_options) and hands the rest of argv to the command. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(_WIN32)
#include <windows.h>
#include <shellapi.h>
#endif

/* `mlstack NAME ...` calls fn(argc, argv) from NAME on; help is NAME's line in `mlstack --help`. */
static const struct {
    const char *name;
    cli_cmd_fn fn;
    const char *help;
} COMMANDS[] = {
    {"run", cli_cmd_run, "-m MODEL [-p TEXT | --ids 1,2,3 | < FILE]  generate a continuation, streamed to stdout"},
    {"chat", cli_cmd_chat, "-m MODEL [--system TEXT]     interactive chat through the model's chat template"},
    {"serve", cli_cmd_serve, "-m MODEL [--port 8080]       OpenAI-compatible HTTP server (chat/completions, SSE)"},
    {"bench", cli_cmd_bench, "(-m MODEL | --shape CONFIG.json)  prompt and generation tokens/s, serving modes"},
    {"eval", cli_cmd_eval, "-m MODEL --ids 1,2,3 [--all] logits, one row per position (%.6g, space-separated)"},
    {"info", cli_cmd_info, "-m MODEL                     architecture, sizes, dtypes and memory plan"},
    {"tokenize", cli_cmd_tokenize, "-m MODEL [--ids-only] [--no-special] (TEXT | -f FILE)  ids (and pieces)"},
    {"template", cli_cmd_template, "-m MODEL --messages F.json [--add-generation-prompt]  the chat template, raw"},
    {"kl", cli_cmd_kl, "-m MODEL -f TEXT [--quant TYPE] [--tokens N]  quantized vs stored weights"},
    {"quantize", cli_cmd_quantize, "-m MODEL --quant TYPE -o OUT[.gguf]  a folder (or GGUF file) of quantized weights"},
};
#define N_COMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static void usage(FILE *f) {
    size_t i;
    fputs("usage: mlstack COMMAND [options]      (mlstack COMMAND --help for a command's options)\n"
          "\n"
          "commands:\n",
          f);
    for (i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-8s %s\n", COMMANDS[i].name, COMMANDS[i].help);
    fputs("\n"
          "MODEL (-m) is a model folder or .gguf file: a Hugging Face folder as downloaded (config.json,\n"
          "*.safetensors, tokenizer files) or a llama.cpp GGUF file.\n"
          "mlstack --help engine: the engine, ISA and rank options; mlstack --version: the build.\n",
          f);
}

/* The commit the Makefile compiled in (git describe), else "unknown" (a build from a tarball). */
#if !defined(MLSTACK_CLI_COMMIT)
#define MLSTACK_CLI_COMMIT "unknown"
#endif
#if defined(__clang__)
#define CLI_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define CLI_COMPILER "gcc " __VERSION__
#elif defined(_MSC_VER)
#define CLI_COMPILER "msvc"
#else
#define CLI_COMPILER "unknown compiler"
#endif

const char *cli_version(void) {
    static char v[512];
    char isa[256], *bar;
    if (!v[0]) {
        mlstack_cpu_report(isa, sizeof isa); /* "compiled: scalar avx2 ... | cpu: ..." */
        if ((bar = strstr(isa, " | ")) != NULL) *bar = 0;
        snprintf(v, sizeof v, "mlstack %s (commit %s, %s; kernels %s)", MLSTACK_VERSION_STRING, MLSTACK_CLI_COMMIT,
                 CLI_COMPILER, isa);
    }
    return v;
}

static size_t find_command(const char *name) {
    size_t i;
    for (i = 0; i < N_COMMANDS && strcmp(COMMANDS[i].name, name) != 0; i++) {}
    return i;
}

#if defined(_WIN32)
/* The command line as UTF-8 (the library's text and paths are UTF-8; main's argv is in the ANSI
   code page, which cannot hold most of Unicode). Lives as long as the process. */
static char **utf8_argv(int *argc) {
    int n = 0, i;
    LPWSTR *w = CommandLineToArgvW(GetCommandLineW(), &n);
    char **a = w ? (char **)calloc((size_t)n + 1, sizeof *a) : NULL;
    for (i = 0; a && i < n; i++) {
        int len = WideCharToMultiByte(CP_UTF8, 0, w[i], -1, NULL, 0, NULL, NULL);
        a[i] = len > 0 ? (char *)malloc((size_t)len) : NULL;
        if (!a[i] || WideCharToMultiByte(CP_UTF8, 0, w[i], -1, a[i], len, NULL, NULL) <= 0) a = NULL;
    }
    if (w) LocalFree(w);
    if (a) *argc = n;
    return a;
}
#endif

int main(int argc, char **argv) {
    size_t c;
    int r;
#if defined(_WIN32)
    {
        char **u = utf8_argv(&argc);
        if (u) argv = u;
    }
#endif
    if ((r = cli_mesh_options(&argc, argv)) != 0) return r;
    if ((r = cli_transport_start(&argc, &argv)) != 0) return r;
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("%s\n", cli_version());
        return 0;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
        if (argc >= 3 && strcmp(argv[2], "engine") == 0) {
            cli_print_engine_help();
            return 0;
        }
        if (argc >= 3 && strcmp(argv[1], "help") == 0 && (c = find_command(argv[2])) < N_COMMANDS) {
            char help[] = "--help", *args[3];
            args[0] = argv[2], args[1] = help, args[2] = NULL;
            return COMMANDS[c].fn(2, args);
        }
        usage(stdout);
        return 0;
    }
    if ((c = find_command(argv[1])) == N_COMMANDS) {
        fprintf(stderr, "mlstack: unknown command '%s' (see mlstack --help)\n", argv[1]);
        return 2;
    }
    return COMMANDS[c].fn(argc - 1, argv + 1);
}
