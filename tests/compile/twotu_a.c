/* Two translation units beside the implementation's (tests/compile/impl.c, which also includes
   the header twice): this one and twotu_b.c, declarations only, each including it twice. */
#include "mlstack.h"
#include "mlstack.h"
int twotu_b(void);
int main(void) { return twotu_b() == 0 && mlstack_result_string(MLSTACK_OK)[0] == 'o' ? 0 : 1; }
