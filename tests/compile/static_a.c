/* MLSTACK_STATIC: each translation unit gets its own private copy; both link together. */
#define MLSTACK_STATIC
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
int static_b(void);
int main(void) { return static_b() == 0 && mlstack_result_string(MLSTACK_ERR_IO)[0] == 'f' ? 0 : 1; }
