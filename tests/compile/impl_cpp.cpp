// The implementation as C++17.
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"

extern "C" const char *decl_c_result(void);
extern "C" const char *decl_c_result(void) { return mlstack_result_string(MLSTACK_ERR_FORMAT); }
