// Intentionally empty: the shim is header-only; SwiftPM needs one source file per C target.
#include "CBearerLinux.h"
