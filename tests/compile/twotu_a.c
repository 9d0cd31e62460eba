/* Two translation units: the implementation here, plus a user header that includes ours. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "mlstack.h"
int twotu_b(void);
int main(void) { return twotu_b() == 0 && mlstack_result_string(MLSTACK_OK)[0] == 'o' ? 0 : 1; }
