#include "tools/ndpcap/report_format.h"

#include <cstdio>

namespace ndnic::ndpcap {

std::string format_text(const FrameReport& r) {
  std::string line = std::to_string(r.number) + " " + kind_name(r.kind);
  char buf[40];
  for (const Field& f : r.fields) {
    line.append(" ").append(f.key).append("=");
    switch (f.type) {
      case Field::Type::kNumber: line += std::to_string(f.number); break;
      case Field::Type::kBool: line += f.number ? "1" : "0"; break;
      case Field::Type::kText: line += f.text; break;
      case Field::Type::kHex:
        std::snprintf(buf, sizeof(buf), "0x%0*llx", f.hex_digits, (unsigned long long)f.number);
        line += buf;
        break;
    }
  }
  return line;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  char buf[8];
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

std::string format_json(const FrameReport& r) {
  std::string line = "{\"frame\":" + std::to_string(r.number) + ",\"kind\":" + json_string(kind_name(r.kind));
  for (const Field& f : r.fields) {
    line.append(",").append(json_string(f.key)).append(":");
    switch (f.type) {
      case Field::Type::kNumber:
      case Field::Type::kHex: line += std::to_string(f.number); break;
      case Field::Type::kBool: line += f.number ? "true" : "false"; break;
      case Field::Type::kText: line += json_string(f.text); break;
    }
  }
  return line + "}";
}

}  // namespace ndnic::ndpcap
