#include <string>

#include "core/report/report.h"

#ifndef QUANTD_VERSION
#define QUANTD_VERSION "dev"
#endif

namespace quantd {

std::string QuantdVersion() { return QUANTD_VERSION; }

}  // namespace quantd
