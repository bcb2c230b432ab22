// A small kernel file (/proc, /sys/fs/cgroup) read whole: the limits the
// server and the thread defaults read at startup.
#ifndef QUANTD_CORE_UTIL_PROC_FILE_H_
#define QUANTD_CORE_UTIL_PROC_FILE_H_

#include <fstream>
#include <sstream>
#include <string>

namespace quantd {

// The file's text, or "" when it is absent or unreadable.
inline std::string ReadProcFile(const char* path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace quantd

#endif  // QUANTD_CORE_UTIL_PROC_FILE_H_
