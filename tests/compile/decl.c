/* Declarations only, compiled as C89, C99 and C11 with -pedantic. */
#include "mlstack.h"

const char *decl_c_result(void);
const char *decl_c_result(void) { return mlstack_result_string(MLSTACK_ERR_FORMAT); }
