/* Second translation unit: declarations only, included twice. */
#include "mlstack.h"
#include "mlstack.h"
int twotu_b(void);
int twotu_b(void) { return mlstack_dtype_name(MLSTACK_DTYPE_F16)[0] == 'F' ? 0 : 1; }
