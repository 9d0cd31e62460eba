/* The header as a test imports it, precompiled once per gcc flavour (the Makefile's flavour
   rules): built with -DMLSTACK__IMPORT_INTERNALS -DMLSTACK_IMPLEMENTATION= and the flavour's
   flags, found by a test's `#include "mlstack.h"` through -iquote, and used when the test
   defines MLSTACK_IMPLEMENTATION (empty) and nothing else before that include; otherwise gcc
   reads the header itself, with the same result. */
#include "mlstack.h"
