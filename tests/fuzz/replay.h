/* Plain replay driver shared by the fuzz targets: include it at the end of a target that
   defines LLVMFuzzerTestOneInput and FZ_NAME. Runs every file given (directories: every regular
   file inside), each from an exact-size heap copy so ASan sees any read past the end. Exits 1
   when nothing ran. Left out when building for libFuzzer (-DMLSTACK_LIBFUZZER). */
#ifndef MLSTACK_LIBFUZZER
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>

static int fz_run_file(const char *path) {
    size_t n = 0, cap = 4096;
    unsigned char *buf = (unsigned char *)malloc(cap);
    FILE *f = fopen(path, "rb");
    if (!f || !buf) {
        fprintf(stderr, "%s: cannot read\n", path);
        if (f) fclose(f);
        free(buf);
        return 0;
    }
    for (;;) {
        size_t got;
        if (n == cap) {
            unsigned char *nb = (unsigned char *)realloc(buf, cap * 2);
            if (!nb) break;
            buf = nb;
            cap *= 2;
        }
        got = fread(buf + n, 1, cap - n, f);
        if (got == 0) break;
        n += got;
    }
    fclose(f);
    /* an exact-size copy, so that ASan sees reads past the end */
    {
        unsigned char *exact = (unsigned char *)malloc(n ? n : 1);
        if (exact) {
            memcpy(exact, buf, n);
            LLVMFuzzerTestOneInput(exact, n);
            free(exact);
        }
    }
    free(buf);
    return 1;
}

static int fz_run_path(const char *path) {
    struct stat st;
    DIR *d;
    struct dirent *e;
    int count = 0;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "%s: not found\n", path);
        return 0;
    }
    if (!S_ISDIR(st.st_mode)) return fz_run_file(path);
    d = opendir(path);
    if (!d) return 0;
    while ((e = readdir(d)) != NULL) {
        char child[4096];
        struct stat cs;
        if (e->d_name[0] == '.') continue;
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        if (stat(child, &cs) == 0 && S_ISREG(cs.st_mode)) count += fz_run_file(child);
    }
    closedir(d);
    return count;
}

int main(int argc, char **argv) {
    int i, count = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
        return 2;
    }
    for (i = 1; i < argc; i++) count += fz_run_path(argv[i]);
    printf("%s: %d inputs ran\n", FZ_NAME, count);
    return count > 0 ? 0 : 1;
}
#endif
