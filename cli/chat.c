/* mlstack chat: an interactive conversation through the model's chat template.

   Each turn renders the whole conversation with the template, encodes it and submits it to the
   engine's scheduler; the radix cache supplies the KV of every earlier turn (whole pages), so
   only the new text is computed. Output streams as it is decoded; Ctrl-C cancels the request.

   Terminal handling (raw mode, the line editor, SIGINT) is POSIX and sits in the TERMINAL part
   below; elsewhere (_WIN32) input is read line by line without editing. */
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if !defined(_WIN32)
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>
#define CHAT_TERMINAL 1
#include "width.h" /* display columns of code points: the terminal editor's alone */
#else
#include <io.h>
#define isatty _isatty
#endif

static volatile sig_atomic_t chat_interrupted, chat_resized;

static char *chat_strdup(const char *s) {
    size_t n = strlen(s);
    char *p = (char *)malloc(n + 1);
    if (p) memcpy(p, s, n + 1);
    return p;
}

/* ==== TERMINAL: raw mode, a small line editor with history, Ctrl-C ==== */

#define CHAT_HISTORY 200

typedef struct chat_editor {
    int tty;            /* stdin is a terminal: edit lines; otherwise read them plainly */
    int out;            /* fd the editor draws on */
    char *hist[CHAT_HISTORY];
    int n_hist;
#if defined(CHAT_TERMINAL)
    struct termios saved;
    int raw;
#endif
    int cols; /* the terminal's width (read again after SIGWINCH) */
    int row;  /* the cursor's row after the last draw, counted from the prompt's */
} chat_editor;

static void chat_on_sigint(int sig) {
    (void)sig;
    chat_interrupted = 1;
}

#if defined(CHAT_TERMINAL)
static void chat_on_sigwinch(int sig) {
    (void)sig;
    chat_resized = 1;
}
#endif

static void chat_signals(void) {
#if defined(CHAT_TERMINAL)
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = chat_on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL); /* no SA_RESTART: a blocking read returns EINTR */
    sa.sa_handler = chat_on_sigwinch;
    sigaction(SIGWINCH, &sa, NULL); /* the line is drawn again at the new width */
#else
    signal(SIGINT, chat_on_sigint);
#endif
}

#if defined(CHAT_TERMINAL)
static void ed_write(const chat_editor *ed, const char *s, size_t n) {
    while (n > 0) {
        ssize_t w = write(ed->out, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}
static void ed_puts(const chat_editor *ed, const char *s) { ed_write(ed, s, strlen(s)); }

static int ed_raw_on(chat_editor *ed) {
    struct termios t;
    if (ed->raw) return 0;
    if (tcgetattr(0, &ed->saved) != 0) return -1;
    t = ed->saved;
    t.c_iflag &= (tcflag_t) ~(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    t.c_cflag |= CS8;
    t.c_lflag &= (tcflag_t) ~(ECHO | ICANON | IEXTEN | ISIG);
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    if (tcsetattr(0, TCSADRAIN, &t) != 0) return -1;
    ed->raw = 1;
    ed_puts(ed, "\033[?2004h"); /* bracketed paste: pasted newlines stay in the message */
    return 0;
}

static void ed_raw_off(chat_editor *ed) {
    if (!ed->raw) return;
    ed_puts(ed, "\033[?2004l");
    tcsetattr(0, TCSADRAIN, &ed->saved);
    ed->raw = 0;
}

/* One byte from the terminal; -1 at end of input or on error, -2 when the terminal was resized
   while waiting (ed_edit draws the line again). */
static int ed_getc(void) {
    unsigned char c;
    for (;;) {
        ssize_t r = read(0, &c, 1);
        if (r == 1) return c;
        if (r < 0 && errno == EINTR) {
            if (chat_resized) return -2;
            continue;
        }
        return -1;
    }
}

/* The terminal's width in columns (80 when it does not say). */
static int ed_term_cols(const chat_editor *ed) {
    struct winsize ws;
    if (ioctl(ed->out, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    return 80;
}

/* The next character of s[i..n) as the editor draws it: its bytes to write (into out, at most 8)
   and the columns it takes at column col. A newline of a paste is a mark (one column), a tab the
   spaces to the next multiple of 8, another control byte ^X, bytes that are not UTF-8 U+FFFD.
   Returns the bytes of s it stands for. */
static size_t ed_glyph(const char *s, size_t i, size_t n, int col, char *out, size_t *out_n, int *w) {
    unsigned char c = (unsigned char)s[i];
    uint32_t cp;
    size_t len, k;
    if (c == '\n') {
        memcpy(out, "\xe2\x8f\x8e", 3), *out_n = 3, *w = 1;
        return 1;
    }
    if (c == '\t') {
        *w = 8 - col % 8;
        memset(out, ' ', (size_t)*w), *out_n = (size_t)*w;
        return 1;
    }
    if (c < 0x20 || c == 0x7f) {
        out[0] = '^', out[1] = (char)(c ^ 0x40), *out_n = 2, *w = 2;
        return 1;
    }
    len = c < 0x80 ? 1 : c >= 0xC2 && c < 0xE0 ? 2 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xF0 && c < 0xF5 ? 4 : 0;
    cp = len == 1 ? c : len == 2 ? c & 0x1Fu : len == 3 ? c & 0x0Fu : c & 0x07u;
    for (k = 1; k < len; k++) {
        if (i + k >= n || ((unsigned char)s[i + k] & 0xC0) != 0x80) break;
        cp = cp << 6 | ((unsigned char)s[i + k] & 0x3Fu);
    }
    if (len == 0 || k < len || (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp < 0xE000))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) {
        memcpy(out, "\xef\xbf\xbd", 3), *out_n = 3, *w = 1;
        return 1;
    }
    memcpy(out, s + i, len), *out_n = len, *w = cli_width(cp);
    return len;
}

/* Draws the prompt and b over the rows the last draw took, wrapping at the terminal's width
   itself (a character that does not fit starts the next row: a wide one never straddles the
   edge), and puts the cursor before byte pos. The rows are separated by CR LF, so a terminal
   that reflows its lines when it is resized keeps them as drawn; ed->row remembers the cursor's
   row (0: the prompt's) for the next draw. */
static void ed_refresh(chat_editor *ed, const char *prompt, const cli_buf *b, size_t pos) {
    cli_buf s;
    size_t i = 0, plen = strlen(prompt);
    int cols = ed->cols > 0 ? ed->cols : 80, row = 0, col = 0, crow = -1, ccol = 0;
    memset(&s, 0, sizeof s);
    if (ed->row > 0) cli_buf_printf(&s, "\033[%dA", ed->row);
    cli_buf_puts(&s, "\r\033[J");
    cli_buf_puts(&s, prompt);
    col = (int)plen % cols, row = (int)plen / cols;
    while (i <= b->n) {
        char g[8];
        size_t gn = 0, used = 0;
        int w = 0;
        if (i < b->n) used = ed_glyph(b->p, i, b->n, col, g, &gn, &w);
        if (w > 0 && col + w > cols && b->p[i] == '\t' && col < cols) /* a tab stops at the edge */
            w = cols - col, gn = (size_t)w;
        else if (w > 0 && col + w > cols && col > 0) { /* does not fit: the next row */
            cli_buf_puts(&s, "\r\n");
            row++, col = 0;
            if (b->p[i] == '\t') used = ed_glyph(b->p, i, b->n, col, g, &gn, &w);
        }
        if (i == pos) crow = row, ccol = col;
        if (i == b->n) break;
        cli_buf_put(&s, g, gn);
        col += w;
        i += used;
    }
    if (col >= cols) { /* the last row is full: go to the next one, as a wrap would */
        cli_buf_puts(&s, "\r\n");
        row++, col = 0;
    }
    if (ccol >= cols) crow++, ccol = 0; /* the cursor after a full row: the next row's start */
    if (row > crow) cli_buf_printf(&s, "\033[%dA", row - crow);
    cli_buf_puts(&s, "\r");
    if (ccol > 0) cli_buf_printf(&s, "\033[%dC", ccol);
    ed->row = crow;
    if (s.p) ed_write(ed, s.p, s.n);
    cli_buf_free(&s);
}

static void ed_insert(cli_buf *b, size_t *pos, const char *s, size_t n) {
    size_t old = b->n;
    if (!cli_buf_put(b, s, n)) return; /* grows the buffer; then move the tail up */
    memmove(b->p + *pos + n, b->p + *pos, old - *pos);
    memcpy(b->p + *pos, s, n);
    b->p[b->n] = 0;
    *pos += n;
}

static void ed_delete(cli_buf *b, size_t from, size_t to) {
    memmove(b->p + from, b->p + to, b->n - to);
    b->n -= to - from;
    b->p[b->n] = 0;
}

/* Whether the character at byte i of b takes no column (a combining mark: it moves, and is
   deleted, with the character before it). */
static int ed_zero_width(const cli_buf *b, size_t i) {
    char g[8];
    size_t gn;
    int w;
    return i < b->n && (unsigned char)b->p[i] >= 0x80 && (ed_glyph(b->p, i, b->n, 0, g, &gn, &w), w == 0);
}
static size_t ed_prev(const cli_buf *b, size_t pos) {
    do {
        while (pos > 0 && ((unsigned char)b->p[--pos] & 0xC0) == 0x80) {}
    } while (pos > 0 && ed_zero_width(b, pos));
    return pos;
}
static size_t ed_next(const cli_buf *b, size_t pos) {
    do {
        if (pos < b->n) pos++;
        while (pos < b->n && ((unsigned char)b->p[pos] & 0xC0) == 0x80) pos++;
    } while (ed_zero_width(b, pos));
    return pos;
}

static void ed_set(cli_buf *b, size_t *pos, const char *s) {
    b->n = 0;
    cli_buf_puts(b, s ? s : "");
    *pos = b->n;
}

/* Reads one line with editing into b (cleared first). Returns 1 for a line, 0 at end of input
   (Ctrl-D on an empty line), 2 when Ctrl-C dropped the line. */
static int ed_edit(chat_editor *ed, const char *prompt, cli_buf *b) {
    size_t pos = 0;
    int hist = ed->n_hist, paste = 0, c;
    char *edited = NULL; /* the line being typed while browsing history */
    b->n = 0;
    cli_buf_put(b, "", 0);
    if (ed_raw_on(ed) != 0) return -1;
    chat_resized = 0;
    ed->cols = ed_term_cols(ed);
    ed->row = 0;
    ed_refresh(ed, prompt, b, pos);
    for (;;) {
        c = ed_getc();
        if (c == -2) { /* resized: the same rows, drawn again at the new width */
            chat_resized = 0;
            ed->cols = ed_term_cols(ed);
            ed_refresh(ed, prompt, b, pos);
            continue;
        }
        if (c < 0) {
            free(edited);
            ed_puts(ed, "\r\n");
            return b->n ? 1 : 0;
        }
        if (paste && c != 27) { /* inside a bracketed paste everything is text */
            char ch = (char)(c == '\r' ? '\n' : c);
            ed_insert(b, &pos, &ch, 1);
            continue;
        }
        if (c == '\r' || c == '\n') break;
        if (c == 3) { /* Ctrl-C: drop the line */
            ed_puts(ed, "^C\r\n");
            free(edited);
            b->n = 0;
            return 2;
        }
        if (c == 4) { /* Ctrl-D: quit on an empty line, else delete under the cursor */
            if (b->n == 0) {
                free(edited);
                ed_puts(ed, "\r\n");
                return 0;
            }
            if (pos < b->n) ed_delete(b, pos, ed_next(b, pos));
        } else if (c == 127 || c == 8) {
            if (pos > 0) {
                size_t p = ed_prev(b, pos);
                ed_delete(b, p, pos);
                pos = p;
            }
        } else if (c == 1)
            pos = 0;                    /* Ctrl-A */
        else if (c == 5)
            pos = b->n;                   /* Ctrl-E */
        else if (c == 2)
            pos = ed_prev(b, pos);        /* Ctrl-B */
        else if (c == 6)
            pos = ed_next(b, pos);        /* Ctrl-F */
        else if (c == 11) {
            b->n = pos;
            b->p[pos] = 0;
        } /* Ctrl-K */
        else if (c == 21) {
            ed_delete(b, 0, pos);
            pos = 0;
        } /* Ctrl-U */
        else if (c == 23) { /* Ctrl-W: the word before the cursor */
            size_t p = pos;
            while (p > 0 && b->p[p - 1] == ' ') p--;
            while (p > 0 && b->p[p - 1] != ' ') p--;
            ed_delete(b, p, pos);
            pos = p;
        } else if (c == 12)
            ed_puts(ed, "\033[H\033[2J"), ed->row = 0; /* Ctrl-L */
        else if (c == 16 || c == 14 || c == 27) {          /* history, arrows, other keys */
            int key = c == 16 ? 'A' : c == 14 ? 'B' : 0;
            if (c == 27) {
                int c1 = ed_getc(), c2 = c1 == '[' || c1 == 'O' ? ed_getc() : -1;
                if (c2 >= '0' && c2 <= '9') { /* ESC [ n ~ and ESC [ 2 0 0 ~ (paste start) */
                    char num[8];
                    int k = 0, d = c2;
                    while (d >= '0' && d <= '9' && k < 7) num[k++] = (char)d, d = ed_getc();
                    num[k] = 0;
                    if (!strcmp(num, "200")) paste = 1;
                    else if (!strcmp(num, "201"))
                        paste = 0;
                    else if (!strcmp(num, "3") && pos < b->n)
                        ed_delete(b, pos, ed_next(b, pos));
                    else if (!strcmp(num, "1") || !strcmp(num, "7"))
                        pos = 0;
                    else if (!strcmp(num, "4") || !strcmp(num, "8"))
                        pos = b->n;
                } else if (c2 == 'C')
                    pos = ed_next(b, pos);
                else if (c2 == 'D')
                    pos = ed_prev(b, pos);
                else if (c2 == 'H')
                    pos = 0;
                else if (c2 == 'F')
                    pos = b->n;
                else if (c2 == 'A' || c2 == 'B')
                    key = c2;
            }
            if (key == 'A' && hist > 0) {
                if (hist == ed->n_hist) {
                    free(edited);
                    edited = b->p ? chat_strdup(b->p) : NULL;
                }
                ed_set(b, &pos, ed->hist[--hist]);
            } else if (key == 'B' && hist < ed->n_hist) {
                hist++;
                ed_set(b, &pos, hist == ed->n_hist ? edited : ed->hist[hist]);
            }
        } else if (c >= 32 || c == 9) {
            char ch = (char)c;
            ed_insert(b, &pos, &ch, 1);
        }
        if (!paste) ed_refresh(ed, prompt, b, pos);
    }
    free(edited);
    ed_refresh(ed, prompt, b, b->n);
    ed_puts(ed, "\r\n");
    return 1;
}

static void ed_history_add(chat_editor *ed, const char *line) {
    if (!*line || (ed->n_hist && !strcmp(ed->hist[ed->n_hist - 1], line))) return;
    if (ed->n_hist == CHAT_HISTORY) {
        free(ed->hist[0]);
        memmove(ed->hist, ed->hist + 1, sizeof(char *) * (CHAT_HISTORY - 1));
        ed->n_hist--;
    }
    ed->hist[ed->n_hist] = chat_strdup(line);
    if (ed->hist[ed->n_hist]) ed->n_hist++;
}
#endif /* CHAT_TERMINAL */

/* A plain line from stdin (no editing) into b without its newline. 1 line, 0 end of input. */
static int plain_line(cli_buf *b) {
    int c, any = 0;
    b->n = 0;
    cli_buf_put(b, "", 0);
    while ((c = fgetc(stdin)) != EOF) {
        any = 1;
        if (c == '\n') break;
        {
            char ch = (char)c;
            cli_buf_put(b, &ch, 1);
        }
    }
    if (b->n && b->p[b->n - 1] == '\r') b->p[--b->n] = 0;
    return any;
}

/* One user message: lines ending in a backslash continue on the next line (joined by a
   newline). Returns 1, 0 at end of input, 2 when Ctrl-C dropped what was typed. */
static int chat_read_message(chat_editor *ed, cli_buf *msg) {
    cli_buf line;
    int r = 0, first = 1;
    memset(&line, 0, sizeof line);
    chat_interrupted = 0; /* a Ctrl-C from here on, even before the answer starts, stops it */
    msg->n = 0;
    cli_buf_put(msg, "", 0);
    for (;;) {
#if defined(CHAT_TERMINAL)
        if (ed->tty) {
            r = ed_edit(ed, first ? "> " : ". ", &line);
            ed_raw_off(ed); /* answers run in cooked mode: Ctrl-C is a signal there */
        } else
            r = plain_line(&line);
#else
        if (ed->tty) fputs(first ? "> " : ". ", stderr);
        r = plain_line(&line);
#endif
        if (r != 1) break;
        first = 0;
        if (line.n && line.p[line.n - 1] == '\\') {
            cli_buf_put(msg, line.p, line.n - 1);
            cli_buf_puts(msg, "\n");
            continue;
        }
        cli_buf_put(msg, line.p, line.n);
        break;
    }
    if (r == 0 && msg->n) r = 1; /* end of input after a continued line: send what there is */
    cli_buf_free(&line);
#if defined(CHAT_TERMINAL)
    if (r == 1 && ed->tty && msg->p) ed_history_add(ed, msg->p);
#endif
    return r;
}

/* ==== CONVERSATION ==== */

typedef struct chat_stats {
    int turns;
    uint64_t prompt, cached, generated;
    double prefill_s, decode_s;
} chat_stats;

typedef struct chat {
    const cli_opts *o;
    mlstack_model *m;
    mlstack_engine *e;
    mlstack_tokenizer *tok;
    const mlstack_chat_template *tpl;
    char *system;
    char **role, **content; /* the conversation after the system message */
    int n, cap;
    chat_stats total, last;
    cli_buf reply;
    int color;
    mlstack_sampler_desc sd; /* this session's sampling (/set changes it); turn k draws with seed + k */
    int max_tokens;          /* an answer's cap (0: none) */
    int draws;               /* turns sampled since the seed was set */
} chat;

/* Chat's defaults where the command line left them: a little randomness, kept near the likely
   tokens, a mild repetition penalty (a small model greedy and unpenalised loops), a random seed,
   a cap on an answer. */
#define CHAT_TEMP 0.7f
#define CHAT_TOP_P 0.95f
#define CHAT_MIN_P 0.05f
#define CHAT_REPEAT 1.1f
#define CHAT_MAX_TOKENS 1024

static uint64_t chat_random_seed(void) {
    uint64_t s = 0;
#if defined(CHAT_TERMINAL)
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) {
        if (fread(&s, sizeof s, 1, f) != 1) s = 0;
        fclose(f);
    }
#endif
    if (!s) s = (uint64_t)time(NULL) * 6364136223846793005ull ^ (uint64_t)(mlstack_clock_seconds() * 1e9);
    return s >> 1 ? s >> 1 : 1; /* below 2^63: a value --seed takes back */
}

static void chat_defaults(chat *c, const cli_opts *o) {
    c->sd = o->sd;
    if (!(o->sampling_set & CLI_SET_TEMP)) c->sd.temperature = CHAT_TEMP;
    if (!(o->sampling_set & CLI_SET_TOP_P)) c->sd.top_p = CHAT_TOP_P;
    if (!(o->sampling_set & CLI_SET_MIN_P)) c->sd.min_p = CHAT_MIN_P;
    if (!(o->sampling_set & CLI_SET_REPEAT)) c->sd.repeat_penalty = CHAT_REPEAT;
    if (!(o->sampling_set & CLI_SET_SEED)) c->sd.seed = chat_random_seed();
    c->max_tokens = o->n_predict_set ? o->n_predict : CHAT_MAX_TOKENS;
}

static int chat_push(chat *c, const char *role, const char *content) {
    if (c->n == c->cap) {
        int cap = c->cap * 2 + 8;
        char **r = (char **)realloc(c->role, sizeof(char *) * (size_t)cap), **t;
        if (!r) return -1;
        c->role = r;
        t = (char **)realloc(c->content, sizeof(char *) * (size_t)cap);
        if (!t) return -1;
        c->content = t;
        c->cap = cap;
    }
    c->role[c->n] = chat_strdup(role);
    c->content[c->n] = chat_strdup(content);
    if (!c->role[c->n] || !c->content[c->n]) {
        free(c->role[c->n]);
        free(c->content[c->n]);
        return -1;
    }
    c->n++;
    return 0;
}

static void chat_clear(chat *c) {
    int i;
    for (i = 0; i < c->n; i++) free(c->role[i]), free(c->content[i]);
    c->n = 0;
}

static void chat_set_system(chat *c, const char *text) {
    free(c->system);
    c->system = text && *text ? chat_strdup(text) : NULL;
}

static int chat_on_token(void *user, uint64_t id, int32_t token, const char *text, size_t len) {
    chat *c = (chat *)user;
    (void)id, (void)token;
    if (text && len) {
        fwrite(text, 1, len, stdout);
        fflush(stdout);
        cli_buf_put(&c->reply, text, len);
    }
    return 0;
}

/* Renders the conversation plus `user` (when not NULL) and encodes it. Returns the count or -1. */
static int chat_render(chat *c, const char *user, int32_t **ids) {
    mlstack_chat_message *msgs = (mlstack_chat_message *)malloc(sizeof *msgs * (size_t)(c->n + 2));
    int n = 0, i, k;
    if (!msgs) return -1;
    if (c->system) msgs[n].role = "system", msgs[n++].content = c->system;
    for (i = 0; i < c->n; i++) msgs[n].role = c->role[i], msgs[n++].content = c->content[i];
    if (user) msgs[n].role = "user", msgs[n++].content = user;
    /* templates carry their own special tokens; the messages' are text (--content-specials) */
    k = cli_chat_encode(c->tpl, c->tok, msgs, n, c->o->content_specials, ids);
    free(msgs);
    return k;
}

static const char *finish_name(mlstack_finish_reason f) {
    switch (f) {
    case MLSTACK_FINISH_EOS: return "end of turn";
    case MLSTACK_FINISH_STOP: return "stop string";
    case MLSTACK_FINISH_LENGTH: return "cut at the answer's token cap: /set max N";
    case MLSTACK_FINISH_CONTEXT: return "context full";
    case MLSTACK_FINISH_CANCELLED: return "stopped";
    case MLSTACK_FINISH_ERROR: return "error";
    default: return "done";
    }
}

/* One turn: the user's message in, the answer streamed out. Returns 0, or 1 on failure. */
static int chat_turn(chat *c, const char *user) {
    mlstack_request_desc d;
    mlstack_request_status st;
    mlstack_error err;
    int32_t *ids = NULL;
    uint64_t id;
    int n, active = 1, cancelled = 0, rc = 0;
    n = chat_render(c, user, &ids);
    if (n <= 0) {
        free(ids);
        return 1;
    }
    memset(&d, 0, sizeof d);
    d.prompt = ids;
    d.n_prompt = n;
    d.sampler = c->sd;
    d.sampler.seed = c->sd.seed + (uint64_t)c->draws++;
    d.max_tokens = c->max_tokens;
    d.ignore_eos = c->o->ignore_eos;
    d.on_token = chat_on_token;
    d.user = c;
    c->reply.n = 0;
    cli_buf_put(&c->reply, "", 0);
    if (mlstack_engine_submit(c->e, &d, &id, &err) != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", err.message);
        free(ids);
        return 1;
    }
    free(ids);
    while (active) {
        if (chat_interrupted && !cancelled) {
            mlstack_engine_cancel(c->e, id);
            cancelled = 1;
        }
        if (mlstack_engine_step(c->e, &active) != MLSTACK_OK) {
            fprintf(stderr, "\nmlstack: %s\n", mlstack_engine_error(c->e));
            rc = 1;
            break;
        }
    }
    memset(&st, 0, sizeof st);
    mlstack_engine_poll(c->e, id, &st, NULL, 0);
    mlstack_engine_release(c->e, id);
    printf("\n");
    fflush(stdout);
    if (st.finish == MLSTACK_FINISH_ERROR) {
        fprintf(stderr, "mlstack: %s\n", st.message);
        rc = 1;
    }
    c->last.turns = 1;
    c->last.prompt = (uint64_t)st.n_prompt;
    c->last.cached = (uint64_t)st.n_cached;
    c->last.generated = (uint64_t)st.n_generated;
    c->last.prefill_s = st.t_first_token;
    c->last.decode_s = st.t_done > st.t_first_token && st.t_first_token > 0 ? st.t_done - st.t_first_token : 0;
    c->total.turns++;
    c->total.prompt += c->last.prompt;
    c->total.cached += c->last.cached;
    c->total.generated += c->last.generated;
    c->total.prefill_s += c->last.prefill_s;
    c->total.decode_s += c->last.decode_s;
    fprintf(stderr, "%s[%d prompt tokens, %d reused from the cache, %d generated, %.1f tokens/s; %s]%s\n",
            c->color ? "\033[2m" : "", st.n_prompt, st.n_cached, st.n_generated,
            c->last.decode_s > 0 && st.n_generated > 1 ? (st.n_generated - 1) / c->last.decode_s : 0.0,
            finish_name(st.finish), c->color ? "\033[0m" : "");
    /* an answer stopped by Ctrl-C (or an error) is not kept as if it were complete: the turn
       is dropped, and the next question follows the last whole answer */
    if (st.finish == MLSTACK_FINISH_CANCELLED || st.finish == MLSTACK_FINISH_ERROR || rc) {
        fprintf(stderr, "(this turn is not kept in the conversation)\n");
    } else if (chat_push(c, "user", user) != 0 || chat_push(c, "assistant", c->reply.p ? c->reply.p : "") != 0) {
        fprintf(stderr, "mlstack: out of memory\n");
        rc = 1;
    }
    return rc;
}

static void chat_print_stats(chat *c) {
    const chat_stats *s[2];
    const char *name[2] = {"last turn", "session"};
    mlstack_cache_stats cs;
    int k;
    s[0] = &c->last;
    s[1] = &c->total;
    for (k = 0; k < 2; k++) {
        uint64_t computed = s[k]->prompt - s[k]->cached;
        printf("%-9s  prompt tokens %llu: %llu computed, %llu reused from the cache (%.0f%%) | prefill %.1f tokens/s | "
               "%llu generated, decode %.1f tokens/s\n",
               name[k], (unsigned long long)s[k]->prompt, (unsigned long long)computed,
               (unsigned long long)s[k]->cached,
               s[k]->prompt ? 100.0 * (double)s[k]->cached / (double)s[k]->prompt : 0.0,
               s[k]->prefill_s > 0 ? (double)computed / s[k]->prefill_s : 0.0, (unsigned long long)s[k]->generated,
               s[k]->decode_s > 0 && s[k]->generated > (uint64_t)s[k]->turns
                   ? (double)(s[k]->generated - (uint64_t)s[k]->turns) / s[k]->decode_s
                   : 0.0);
    }
    printf("sampling   temperature %g, top-k %d, top-p %g, min-p %g, repetition penalty %g, answer cap %d tokens\n"
           "seed       %llu (turn k after it draws with seed + k; --seed or /set seed repeats a session)\n",
           c->sd.temperature, c->sd.top_k, c->sd.top_p, c->sd.min_p, c->sd.repeat_penalty, c->max_tokens,
           (unsigned long long)c->sd.seed);
    mlstack_engine_cache_stats(c->e, &cs);
    printf("KV cache   %d of %d pages used (%d tokens each), %d cached for reuse; %d messages in the conversation\n",
           cs.pages_used, cs.n_pages, cs.page_tokens, cs.pages_cached, c->n + (c->system ? 1 : 0));
}

static int chat_save(chat *c, const char *path) {
    cli_buf b;
    FILE *f;
    int i, ok;
    memset(&b, 0, sizeof b);
    cli_buf_puts(&b, "[");
    if (c->system) {
        cli_buf_puts(&b, "\n  {\"role\": \"system\", \"content\": ");
        cli_buf_json(&b, c->system, strlen(c->system));
        cli_buf_puts(&b, "}");
    }
    for (i = 0; i < c->n; i++) {
        cli_buf_puts(&b, i || c->system ? ",\n  {\"role\": " : "\n  {\"role\": ");
        cli_buf_json(&b, c->role[i], strlen(c->role[i]));
        cli_buf_puts(&b, ", \"content\": ");
        cli_buf_json(&b, c->content[i], strlen(c->content[i]));
        cli_buf_puts(&b, "}");
    }
    cli_buf_puts(&b, "\n]\n");
    f = b.oom ? NULL : fopen(path, "wb");
    ok = f && fwrite(b.p, 1, b.n, f) == b.n;
    if (f && fclose(f) != 0) ok = 0;
    cli_buf_free(&b);
    if (!ok) fprintf(stderr, "mlstack: could not write %s\n", path);
    else
        printf("saved %d messages to %s\n", c->n + (c->system ? 1 : 0), path);
    return ok ? 0 : 1;
}

/* Loads a JSON list of {"role", "content"} messages; a "system" message becomes the system
   prompt. The conversation is replaced only when the whole file is valid. */
static int chat_load(chat *c, const char *path) {
    char *text;
    size_t len;
    mlstack_json_doc *doc;
    mlstack_error err;
    const mlstack_json *v;
    chat tmp;
    int rc = 0, k = 0;
    if (cli_read_file(path, (size_t)64 << 20, &text, &len) != 0) return 1;
    if (mlstack_json_parse(text, len, path, &doc, &err) != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", err.message);
        free(text);
        return 1;
    }
    memset(&tmp, 0, sizeof tmp);
    if (mlstack_json_type_of(mlstack_json_root(doc)) != MLSTACK_JSON_ARRAY) {
        fprintf(stderr, "mlstack: %s: expected a JSON list of {\"role\": ..., \"content\": ...} messages\n", path);
        rc = 1;
    }
    for (v = mlstack_json_child(mlstack_json_root(doc)); !rc && v; v = mlstack_json_next(v), k++) {
        const char *role = mlstack_json_string(mlstack_json_get(v, "role"), NULL);
        const char *content = mlstack_json_string(mlstack_json_get(v, "content"), NULL);
        if (!role || !content) {
            fprintf(stderr, "mlstack: %s: message %d needs string \"role\" and \"content\"\n", path, k);
            rc = 1;
        } else if (!strcmp(role, "system") && tmp.n == 0) {
            chat_set_system(&tmp, content);
        } else if (chat_push(&tmp, role, content) != 0) {
            fprintf(stderr, "mlstack: out of memory\n");
            rc = 1;
        }
    }
    if (!rc) {
        chat_clear(c);
        free(c->role);
        free(c->content);
        free(c->system);
        c->role = tmp.role, c->content = tmp.content, c->n = tmp.n, c->cap = tmp.cap, c->system = tmp.system;
        printf("loaded %d messages from %s\n", c->n + (c->system ? 1 : 0), path);
    } else {
        chat_clear(&tmp);
        free(tmp.role);
        free(tmp.content);
        free(tmp.system);
    }
    mlstack_json_free(doc);
    free(text);
    return rc;
}

static const char *CHAT_HELP =
    "commands:\n"
    "  /help           this text\n"
    "  /reset          forget the conversation (the system message stays)\n"
    "  /system TEXT    set the system message (empty: none)\n"
    "  /save FILE      write the conversation as a JSON list of messages\n"
    "  /load FILE      read a conversation written by /save (or any list of role/content)\n"
    "  /stats          prompt tokens computed vs reused from the cache, speeds, sampling and seed\n"
    "  /set [NAME V]   sampling: temp, top_k, top_p, min_p, repeat, seed, max (an answer's cap,\n"
    "                  0: none); /set alone shows them\n"
    "  /quit           leave (also Ctrl-D on an empty line)\n"
    "A line ending in \\ continues the message on the next line; pasted newlines stay in it.\n"
    "Ctrl-C stops an answer; on an empty line it does nothing.\n";

/* /set NAME VALUE: one sampling setting (by the command line's bounds); /set alone prints them. */
static void chat_set(chat *c, const char *arg) {
    static const struct {
        const char *name;
        double lo, hi;
    } S[] = {{"temp", 0, 100},   {"top_k", 0, 1e9},   {"top_p", 0, 1}, {"min_p", 0, 1},
             {"repeat", 0, 100}, {"seed", 0, 1.8e19}, {"max", 0, 1e9}};
    char name[16];
    const char *v;
    double x;
    size_t k, n;
    if (!arg || !*arg) {
        printf("temp %g  top_k %d  top_p %g  min_p %g  repeat %g  seed %llu  max %d\n", c->sd.temperature, c->sd.top_k,
               c->sd.top_p, c->sd.min_p, c->sd.repeat_penalty, (unsigned long long)c->sd.seed, c->max_tokens);
        return;
    }
    n = strcspn(arg, " ");
    v = arg + n;
    while (*v == ' ') v++;
    for (k = 0; k < sizeof S / sizeof S[0] && (n != strlen(S[k].name) || strncmp(arg, S[k].name, n)); k++) {}
    if (k == sizeof S / sizeof S[0] || n >= sizeof name) {
        printf("/set: unknown setting %.*s (temp, top_k, top_p, min_p, repeat, seed, max)\n", (int)n, arg);
        return;
    }
    memcpy(name, arg, n), name[n] = 0;
    if (!cli_parse_num(v, S[k].lo, S[k].hi, &x) || (k == 1 || k >= 5 ? x != (double)(uint64_t)x : 0)) {
        printf("/set %s: expected a %s from %g to %g\n", name, k == 1 || k >= 5 ? "whole number" : "number", S[k].lo,
               S[k].hi);
        return;
    }
    if (k == 0) c->sd.temperature = (float)x;
    else if (k == 1)
        c->sd.top_k = (int)x;
    else if (k == 2)
        c->sd.top_p = (float)x;
    else if (k == 3)
        c->sd.min_p = (float)x;
    else if (k == 4)
        c->sd.repeat_penalty = (float)x;
    else if (k == 5)
        c->sd.seed = (uint64_t)x, c->draws = 0; /* the next turn draws with x, the one after with x + 1 */
    else
        c->max_tokens = (int)x;
    printf("%s %s\n", name, v);
}

/* Runs a /command; returns 1 to quit, 0 otherwise. */
static int chat_command(chat *c, const char *line) {
    const char *arg = strchr(line, ' ');
    size_t n = arg ? (size_t)(arg - line) : strlen(line);
    while (arg && *arg == ' ') arg++;
#define IS(s) (n == strlen(s) && !strncmp(line, s, n))
    if (IS("/help") || IS("/?")) fputs(CHAT_HELP, stdout);
    else if (IS("/quit") || IS("/exit"))
        return 1;
    else if (IS("/reset")) {
        chat_clear(c);
        printf("conversation cleared%s\n", c->system ? " (system message kept)" : "");
    } else if (IS("/system")) {
        chat_set_system(c, arg);
        printf(c->system ? "system message set\n" : "system message cleared\n");
    } else if (IS("/stats"))
        chat_print_stats(c);
    else if (IS("/set"))
        chat_set(c, arg);
    else if (IS("/save") || IS("/load")) {
        if (!arg || !*arg) printf("%.*s needs a FILE\n", (int)n, line);
        else if (IS("/save"))
            chat_save(c, arg);
        else
            chat_load(c, arg);
    } else
        printf("unknown command %.*s (try /help)\n", (int)n, line);
#undef IS
    fflush(stdout);
    return 0;
}

static int cmd_chat(const cli_opts *o) {
    chat c;
    chat_editor ed;
    cli_buf msg;
    int rc = 0, i;
    memset(&c, 0, sizeof c);
    memset(&ed, 0, sizeof ed);
    memset(&msg, 0, sizeof msg);
    c.o = o;
    chat_defaults(&c, o);
    if ((rc = cli_open_model(o, 1, &c.m, &c.e, NULL)) != 0) return rc;
    c.tok = mlstack_model_tokenizer(c.m);
    c.tpl = mlstack_model_chat_template(c.m);
    if (!c.tok || !c.tpl) {
        fprintf(stderr, "mlstack: %s has no %s: chat needs a model folder with its tokenizer files\n", o->model,
                !c.tok ? "tokenizer.json" : "chat template");
        mlstack_engine_free(c.e);
        mlstack_model_close(c.m);
        return 1;
    }
    chat_set_system(&c, o->system);
    chat_signals();
    ed.tty = !o->prompt && isatty(0);
#if defined(CHAT_TERMINAL)
    ed.out = isatty(1) ? 1 : 2;
    c.color = ed.tty && isatty(2);
#endif
    if (ed.tty)
        fprintf(stderr, "mlstack chat: %s. /help for commands, Ctrl-C stops an answer, Ctrl-D quits.\n", o->model);
    if (o->prompt) {
        rc = chat_turn(&c, o->prompt);
    } else {
        for (;;) {
            int r = chat_read_message(&ed, &msg);
            if (r == 0 || r < 0) break;
            if (r == 2) continue;
            if (!msg.p || !msg.n) continue;
            if (msg.p[0] == '/') {
                if (chat_command(&c, msg.p)) break;
                continue;
            }
            if (chat_turn(&c, msg.p) != 0) rc = 1;
        }
    }
#if defined(CHAT_TERMINAL)
    ed_raw_off(&ed);
#endif
    for (i = 0; i < ed.n_hist; i++) free(ed.hist[i]);
    chat_clear(&c);
    free(c.role);
    free(c.content);
    free(c.system);
    cli_buf_free(&c.reply);
    cli_buf_free(&msg);
    mlstack_engine_free(c.e);
    mlstack_model_close(c.m);
    return rc;
}

/* ---- entry points (main.c's table) and their help ---- */

static const cli_help HELP_CHAT = {
    "mlstack chat -m MODEL [--system TEXT] [-p TEXT] [options]",
    "An interactive conversation through the model's chat template. On a terminal: line editing\n"
    "(arrows, Home/End, Ctrl-A/E/K/U/W), history (up/down), multi-line input (end a line with \\,\n"
    "or paste), Ctrl-C stops the answer, Ctrl-D on an empty line quits. Piped stdin: one user\n"
    "turn per line (a line ending in \\ continues). Type /help in the chat for its commands.\n"
    "Earlier turns' KV is reused from the prefix cache.\n"
    "      --system TEXT        system message\n"
    "      --content-specials M text (default): special-token text in messages is plain text;\n"
    "                           parse: special tokens, as apply_chat_template(tokenize=True)\n"
    "  -p, --prompt TEXT        one turn with TEXT, then exit\n"
    "      --kv-mem MIB         KV cache budget (default: the model's context, at most 4096 tokens)\n"
    "Chat's sampling defaults (each option below overrides its own): --temp 0.7, --top-p 0.95,\n"
    "--min-p 0.05, --repeat-penalty 1.1, a random seed (shown by /stats), -n 1024 (0: no cap).\n"
    "/set changes them during the chat.\n",
    1, 1};
int cli_cmd_chat(int argc, char **argv) { return cli_run_with_opts(argc, argv, &HELP_CHAT, cmd_chat); }
