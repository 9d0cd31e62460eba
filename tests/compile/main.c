/* Links the declaration-only objects against the implementation and calls through both. */
#include <stdio.h>
#include <string.h>
#include "mlstack.h"

const char *decl_c_result(void);

int main(void) {
    mlstack_sampler *s = NULL;
    mlstack_sampler_desc d;
    float logits[4] = {0.1f, 2.0f, -1.0f, 0.5f};
    int32_t t;
    memset(&d, 0, sizeof d);
    if (strcmp(decl_c_result(), "malformed file") != 0) return 1;
    if (mlstack_sampler_init(&d, 4, &s) != MLSTACK_OK) return 1;
    t = mlstack_sampler_sample(s, logits);
    mlstack_sampler_free(s);
    if (t != 1) return 1;
    printf("link ok\n");
    return 0;
}
