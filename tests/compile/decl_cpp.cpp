// Declarations only, compiled as C++98.
#include "mlstack.h"

extern "C" const char *decl_cpp_dtype(void);
extern "C" const char *decl_cpp_dtype(void) { return mlstack_dtype_name(MLSTACK_DTYPE_BF16); }
