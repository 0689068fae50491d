// ember-onnx: ONNX models with ember.
//
//   ember-onnx info model.onnx                 inputs, outputs, opsets, operators (supported?)
//   ember-onnx test DIR [--backend cpu]        every ONNX backend-test folder under DIR
//   ember-onnx test DIR --expect FILE          ... and fail if a test listed in FILE fails
//   ember-onnx test DIR --no-passes            ... without the graph passes (passes.h)
//   ember-onnx import model.onnx OUT/ [--name N] [--embed]   C++ module + weights (codegen.h)
//   ember-onnx ops                             the operators the runtime implements
#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "ember/onnx/codegen.h"
#include "ember/onnx/conformance.h"
#include "ember/onnx/passes.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

int usage() {
  std::cerr << "usage:\n"
               "  ember-onnx info MODEL.onnx\n"
               "  ember-onnx test DIR [--backend DEVICE] [--filter TEXT] [--expect FILE]\n"
               "                      [--report FILE.json] [--no-passes]\n"
               "  ember-onnx import MODEL.onnx OUT_DIR [--name NAME] [--embed] [--no-passes]\n"
               "  ember-onnx import-suite DIR OUT_DIR [--list FILE] [--per N]\n"
               "  ember-onnx ops\n";
  return 2;
}

std::string dims_text(const onnx::ValueInfo& v) {
  if (!v.shape) return "?";
  std::string s = "[";
  for (size_t i = 0; i < v.shape->size(); ++i) {
    const auto& d = (*v.shape)[i];
    s += (i ? ", " : "") + (d.size ? std::to_string(*d.size) : d.symbol.empty() ? "?" : d.symbol);
  }
  return s + "]";
}

std::string value_text(const onnx::ValueInfo& v) {
  std::string kind = v.kind == onnx::ValueInfo::Kind::Sequence   ? "sequence of "
                     : v.kind == onnx::ValueInfo::Kind::Optional ? "optional "
                                                                 : "";
  return v.name + ": " + kind + std::string(onnx::onnx_type_name(v.elem.onnx)) + " " + dims_text(v);
}

void count_ops(const onnx::Graph& g, std::map<std::string, int>& ops) {
  for (const auto& n : g.nodes) {
    ++ops[n.domain.empty() ? n.op_type : n.domain + "." + n.op_type];
    for (const auto& a : n.attributes)
      for (const auto& sub : a.graphs) count_ops(*sub, ops);
  }
}

onnx::ParseOptions inferring() {
  onnx::ParseOptions o;
  o.infer_shapes = true;
  return o;
}

int info(const fs::path& path) {
  auto m = onnx::load_model(path, inferring());
  std::cout << path.string() << "\n  ir_version " << m.ir_version << ", producer "
            << (m.producer_name.empty() ? "?" : m.producer_name) << " " << m.producer_version
            << "\n  opsets:";
  for (const auto& [d, v] : m.opsets) std::cout << " " << (d.empty() ? "ai.onnx" : d) << " " << v;
  std::set<std::string> init;
  for (const auto& [n, d] : m.graph.initializers) init.insert(n);
  std::cout << "\n  inputs:\n";
  for (const auto& v : m.graph.inputs)
    if (!init.contains(v.name)) std::cout << "    " << value_text(v) << "\n";
  std::cout << "  outputs:\n";
  for (const auto& v : m.graph.outputs) std::cout << "    " << value_text(v) << "\n";
  int64_t params = 0;
  for (const auto& [n, d] : m.graph.initializers) params += d.numel();
  std::cout << "  initializers: " << m.graph.initializers.size() << " (" << params
            << " values)\n  operators:\n";
  std::map<std::string, int> ops;
  count_ops(m.graph, ops);
  for (const auto& [op, n] : ops) {
    const auto dot = op.rfind('.');
    const bool ok = dot == std::string::npos
                        ? onnx::is_supported_op("", op)
                        : onnx::is_supported_op(op.substr(0, dot), op.substr(dot + 1));
    std::cout << "    " << op << " x" << n << (ok ? "" : "  (not supported)") << "\n";
  }
  size_t values = 0, shaped = 0;
  std::set<std::string> with_shape;
  for (const auto& v : m.graph.value_info)
    if (v.shape) with_shape.insert(v.name);
  for (const auto& n : m.graph.nodes)
    for (const auto& o : n.outputs)
      if (!o.empty()) {
        ++values;
        shaped += with_shape.contains(o);
      }
  std::cout << "  shapes known (ONNX's inference): " << shaped << " of " << values
            << " node outputs\n";
  const size_t before = m.graph.nodes.size();
  auto optimized = m;
  auto report = onnx::optimize(optimized);
  std::cout << "  graph passes: " << before << " -> " << optimized.graph.nodes.size() << " nodes ("
            << report.to_string() << ")\n";
  auto problems = onnx::unsupported(m);
  if (problems.empty()) {
    std::cout << "  ember runs every node of this model\n";
    return 0;
  }
  std::cout << "  ember cannot run " << problems.size() << " thing(s):\n";
  for (const auto& p : problems) std::cout << "    " << p << "\n";
  return 1;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) {
      o += ' ';
      continue;
    }
    o += ch;
  }
  return o;
}

int test(const fs::path& dir, const std::string& device, const std::string& filter,
         const std::string& expect_file, const std::string& report, bool optimize) {
  const Device dev = Device::parse(device);
  std::vector<fs::path> tests;
  if (fs::exists(dir / "model.onnx")) {
    tests.push_back(dir);
  } else {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_directory() && fs::exists(e.path() / "model.onnx") &&
          e.path().filename().string().find(filter) != std::string::npos)
        tests.push_back(e.path());
  }
  std::sort(tests.begin(), tests.end());
  std::set<std::string> expected;
  if (!expect_file.empty()) {
    std::ifstream in(expect_file);
    if (!in) {
      std::cerr << "ember-onnx: cannot read " << expect_file << "\n";
      return 2;
    }
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line[0] != '#') expected.insert(line);
  }
  int passed = 0, failed = 0, skipped = 0;
  std::vector<std::string> regressions;
  std::ofstream json;
  if (!report.empty()) {
    json.open(report);
    json << "[\n";
  }
  bool first = true;
  for (const auto& t : tests) {
    onnx::TestOptions options;
    options.optimize = optimize;
    auto r = onnx::run_backend_test(t, dev, options);
    const char* tag = r.status == onnx::TestStatus::Passed    ? "PASS"
                      : r.status == onnx::TestStatus::Skipped ? "SKIP"
                                                              : "FAIL";
    std::cout << tag << " " << r.name;
    if (!r.message.empty()) std::cout << ": " << r.message.substr(0, 300);
    std::cout << "\n";
    (r.status == onnx::TestStatus::Passed    ? passed
     : r.status == onnx::TestStatus::Skipped ? skipped
                                             : failed)++;
    if (r.status != onnx::TestStatus::Passed && expected.contains(r.name))
      regressions.push_back(r.name);
    if (json.is_open()) {
      json << (first ? "" : ",\n") << "  {\"name\": \"" << r.name << "\", \"status\": \"" << tag
           << "\", \"ops\": [";
      for (size_t i = 0; i < r.ops.size(); ++i) json << (i ? ", " : "") << "\"" << r.ops[i] << "\"";
      json << "], \"message\": \"" << json_escape(r.message.substr(0, 300)) << "\"}";
      first = false;
    }
  }
  if (json.is_open()) json << "\n]\n";
  std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
  if (!regressions.empty()) {
    std::cout << regressions.size() << " test(s) listed in " << expect_file << " did not pass:";
    for (const auto& n : regressions) std::cout << " " << n;
    std::cout << "\n";
    return 1;
  }
  return expect_file.empty() && failed > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return usage();
  try {
    if (args[0] == "info" && args.size() == 2) return info(args[1]);
    if (args[0] == "import" && args.size() >= 3) {
      onnx::CodegenOptions o;
      o.name = fs::path(args[1]).stem().string();
      for (size_t i = 3; i < args.size(); ++i) {
        if (args[i] == "--name" && i + 1 < args.size())
          o.name = args[++i];
        else if (args[i] == "--embed")
          o.embed_weights = true;
        else if (args[i] == "--no-passes")
          o.optimize = false;
        else
          return usage();
      }
      auto files = onnx::write_module(onnx::load_model(args[1], inferring()), args[2], o);
      std::cout << "wrote " << files.header.string() << ", " << files.source.string();
      if (!files.weights.empty()) std::cout << ", " << files.weights.string();
      std::cout << " (" << files.params.size() << " parameters)\n";
      return 0;
    }
    if (args[0] == "import-suite" && args.size() >= 3) {
      // Every test folder under DIR (or those named in --list), one suite file per --per.
      std::vector<fs::path> tests;
      std::string list;
      size_t per = 100;
      for (size_t i = 3; i < args.size(); ++i) {
        if (args[i] == "--list" && i + 1 < args.size())
          list = args[++i];
        else if (args[i] == "--per" && i + 1 < args.size())
          per = std::stoul(args[++i]);
        else
          return usage();
      }
      if (!list.empty()) {
        std::ifstream in(list);
        if (!in) throw ValueError("cannot read " + list);
        for (std::string line; std::getline(in, line);)
          if (!line.empty() && line[0] != '#') tests.push_back(fs::path(args[1]) / line);
      } else {
        for (const auto& e : fs::directory_iterator(args[1]))
          if (fs::exists(e.path() / "model.onnx")) tests.push_back(e.path());
        std::sort(tests.begin(), tests.end());
      }
      auto skipped = onnx::write_suite(tests, args[2], per);
      for (const auto& s : skipped) std::cout << "SKIP " << s.substr(0, 300) << "\n";
      std::cout << tests.size() - skipped.size() << " generated, " << skipped.size()
                << " skipped\n";
      return 0;
    }
    if (args[0] == "ops") {
      for (const auto& op : onnx::supported_ops()) std::cout << op << "\n";
      return 0;
    }
    if (args[0] == "test" && args.size() >= 2) {
      std::string device = "cpu", filter, expect, report;
      bool optimize = true;
      for (size_t i = 2; i < args.size(); ++i) {
        auto value = [&]() -> std::string {
          if (i + 1 >= args.size()) throw ValueError(args[i] + " needs a value");
          return args[++i];
        };
        if (args[i] == "--backend")
          device = value();
        else if (args[i] == "--filter")
          filter = value();
        else if (args[i] == "--expect")
          expect = value();
        else if (args[i] == "--report")
          report = value();
        else if (args[i] == "--no-passes")
          optimize = false;
        else
          return usage();
      }
      return test(args[1], device, filter, expect, report, optimize);
    }
  } catch (const std::exception& e) {
    std::cerr << "ember-onnx: " << e.what() << "\n";
    return 1;
  }
  return usage();
}
