/* MLSTACK_STATIC: this translation unit gets its own private copy, and links beside the shared
   implementation (the plain flavour's object, which static_b.c calls): a symbol the private copy
   leaked would be defined twice. */
#define MLSTACK_STATIC
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
int static_b(void);
int main(void) { return static_b() == 0 && mlstack_result_string(MLSTACK_ERR_IO)[0] == 'f' ? 0 : 1; }
