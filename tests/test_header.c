/* The header's table of contents matches its numbered section banners, in order, and the
   declarations part is pure ASCII. */
#include "mlstack.h"
#include "testlib.h"

int main(void) {
    size_t len, i;
    char *h = tl_read("mlstack.h", &len), *p, *toc_end, *impl;
    char toc[64][96], ban[64][96];
    int n_toc = 0, n_ban = 0, k;
    if (!h) {
        CHECKF(0, "cannot read mlstack.h (run from the repository root)");
        return tl_finish();
    }
    p = strstr(h, "TABLE OF CONTENTS");
    toc_end = p ? strstr(p, "BUILD OPTIONS") : NULL;
    CHECK(p && toc_end);
    /* TOC lines look like "     10. MODEL   text   >>model" */
    while (p && toc_end && (p = strchr(p, '\n')) && p < toc_end) {
        int num;
        char name[32], anchor[32];
        char line[256];
        size_t l = strcspn(p + 1, "\n");
        if (l >= sizeof line) l = sizeof line - 1;
        memcpy(line, p + 1, l);
        line[l] = 0;
        p++;
        if (sscanf(line, " %d. %31s", &num, name) == 2) {
            char *a = strstr(line, ">>");
            if (a && sscanf(a + 2, "%31s", anchor) == 1 && n_toc < 64)
                snprintf(toc[n_toc++], 96, "%d. %s >>%s", num, name, anchor);
        }
    }
    /* banners: the comment banner followed by the anchor comment */
    for (p = h; (p = strstr(p, "/* ==== ")) != NULL; p++) {
        int num;
        char name[32], anchor[32];
        char *a;
        if (sscanf(p, "/* ==== %d. %31s ==== */", &num, name) != 2) continue;
        a = strstr(p, ">>");
        if (a && sscanf(a + 2, "%31[a-z0-9_]", anchor) == 1 && n_ban < 64)
            snprintf(ban[n_ban++], 96, "%d. %s >>%s", num, name, anchor);
    }
    CHECKF(n_toc == n_ban && n_toc > 5, "table of contents has %d entries, banners %d", n_toc, n_ban);
    for (k = 0; k < n_toc && k < n_ban; k++) {
        CHECKF(strcmp(toc[k], ban[k]) == 0, "entry %d: contents says \"%s\", banner says \"%s\"", k, toc[k], ban[k]);
        CHECKF(atoi(toc[k]) == k + 1, "entry \"%s\" out of sequence", toc[k]);
    }
    impl = strstr(h, "#if defined(MLSTACK_IMPLEMENTATION) && !defined(MLSTACK_IMPLEMENTATION_INCLUDED)");
    CHECK(impl != NULL);
    for (i = 0; impl && h + i < impl; i++)
        if ((unsigned char)h[i] >= 0x80) break;
    CHECKF(impl && h + i == impl, "non-ASCII byte in the declarations at offset %zu", i);
    free(h);
    return tl_finish();
}
