// Rendering of parsed Jinja templates (see jinja.h), with Python's semantics
// for values, operators and the string methods templates call.
#include "tokenizer/chat_template.h"
#include "tokenizer/jinja.h"
#include "tokenizer/unicode.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <optional>
#include <unordered_map>

namespace llmserve::jinja {
namespace {

[[noreturn]] void fail(int line, const std::string &message) {
  throw ChatTemplateError("chat template line " + std::to_string(line) + ": " + message);
}

Value undefined() { return Value(Value::value_t::discarded); }
bool is_undefined(const Value &v) { return v.is_discarded(); }

const char *type_name(const Value &v) {
  switch (v.type()) {
  case Value::value_t::discarded: return "undefined";
  case Value::value_t::null: return "none";
  case Value::value_t::boolean: return "bool";
  case Value::value_t::string: return "string";
  case Value::value_t::array: return "list";
  case Value::value_t::object: return "dict";
  case Value::value_t::number_float: return "float";
  default: return "int";
  }
}

bool truthy(const Value &v) {
  switch (v.type()) {
  case Value::value_t::discarded:
  case Value::value_t::null: return false;
  case Value::value_t::boolean: return v.get<bool>();
  case Value::value_t::string: return !v.get_ref<const std::string &>().empty();
  case Value::value_t::array:
  case Value::value_t::object: return !v.empty();
  case Value::value_t::number_float: return v.get<double>() != 0;
  default: return v.get<int64_t>() != 0;
  }
}

std::string python_repr(const Value &v);

// Python's repr() of a float, which str() and json.dumps() print too: the
// shortest digits that read back the same, positional for exponents -4..15.
std::string python_float(double x) {
  if (!std::isfinite(x))
    return std::isnan(x) ? "nan" : x < 0 ? "-inf" : "inf";
  char buf[32];
  char *end = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific).ptr;
  std::string sci(buf, end); // [-]d[.ddd]e(+|-)dd
  size_t e = sci.find('e');
  int exp = std::stoi(sci.substr(e + 1));
  std::string sign = sci[0] == '-' ? "-" : "", digits;
  for (size_t i = sign.size(); i < e; ++i)
    if (sci[i] != '.')
      digits += sci[i];
  if (exp < -4 || exp >= 16) {
    char exponent[8];
    std::snprintf(exponent, sizeof exponent, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return sign + digits[0] + (digits.size() > 1 ? "." + digits.substr(1) : "") + exponent;
  }
  if (exp < 0)
    return sign + "0." + std::string(-exp - 1, '0') + digits;
  if (digits.size() <= static_cast<size_t>(exp) + 1)
    return sign + digits + std::string(exp + 1 - digits.size(), '0') + ".0";
  return sign + digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
}

// How {{ v }} prints v (Python's str()).
std::string to_text(const Value &v) {
  switch (v.type()) {
  case Value::value_t::discarded: return "";
  case Value::value_t::null: return "None";
  case Value::value_t::boolean: return v.get<bool>() ? "True" : "False";
  case Value::value_t::string: return v.get<std::string>();
  case Value::value_t::array:
  case Value::value_t::object: return python_repr(v);
  case Value::value_t::number_float: return python_float(v.get<double>());
  default: return v.dump();
  }
}

std::string python_repr(const Value &v) {
  if (v.is_string()) {
    std::string out = "'";
    for (char c : v.get_ref<const std::string &>()) {
      if (c == '\'' || c == '\\') out += '\\', out += c;
      else if (c == '\n') out += "\\n";
      else if (c == '\t') out += "\\t";
      else if (c == '\r') out += "\\r";
      else out += c;
    }
    return out + "'";
  }
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i)
      out += (i ? ", " : "") + python_repr(v[i]);
    return out + "]";
  }
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto &[k, item] : v.items()) {
      out += (first ? "'" : ", '") + k + "': " + python_repr(item);
      first = false;
    }
    return out + "}";
  }
  return to_text(v);
}

// Python's json.dumps(v, ensure_ascii=False[, indent]) as transformers'
// tojson filter calls it.
void to_json(const Value &v, int indent, int depth, std::string &out) {
  auto newline = [&](int d) {
    if (indent < 0)
      return;
    out += '\n';
    out.append(static_cast<size_t>(indent * d), ' ');
  };
  const char *item_sep = indent < 0 ? ", " : ",";
  switch (v.type()) {
  case Value::value_t::string:
    out += '"';
    for (unsigned char c : v.get_ref<const std::string &>()) {
      switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
      }
    }
    out += '"';
    break;
  case Value::value_t::array:
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += item_sep;
      newline(depth + 1);
      to_json(v[i], indent, depth + 1, out);
    }
    if (!v.empty()) newline(depth);
    out += ']';
    break;
  case Value::value_t::object: {
    out += '{';
    bool first = true;
    for (const auto &[k, item] : v.items()) {
      if (!first) out += item_sep;
      first = false;
      newline(depth + 1);
      to_json(Value(k), indent, depth + 1, out);
      out += ": ";
      to_json(item, indent, depth + 1, out);
    }
    if (!v.empty()) newline(depth);
    out += '}';
    break;
  }
  case Value::value_t::discarded:
    out += "null";
    break;
  case Value::value_t::number_float: {
    double x = v.get<double>();
    if (std::isfinite(x))
      out += python_float(x);
    else
      out += std::isnan(x) ? "NaN" : x < 0 ? "-Infinity" : "Infinity";
    break;
  }
  default:
    out += v.dump();
  }
}

struct CodePoint {
  size_t begin, size;
  uint32_t value;
};

// Python strings are sequences of code points. Bytes that are not valid UTF-8
// (values built by a C++ caller) count one by one, as U+FFFD.
std::vector<CodePoint> decode(const std::string &s) {
  std::vector<CodePoint> out;
  for (size_t i = 0, len; i < s.size(); i += len) {
    auto lead = static_cast<unsigned char>(s[i]);
    size_t need = lead < 0x80 ? 1 : lead < 0xC0 ? 0 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    uint32_t cp = 0xFFFD;
    len = 1;
    if (need && i + need <= s.size())
      cp = unicode::decode_at(s, i, &len);
    out.push_back({i, len, cp});
  }
  return out;
}

// The text of code points [begin, end).
std::string text(const std::string &s, const std::vector<CodePoint> &cps, size_t begin,
                 size_t end) {
  size_t from = begin < cps.size() ? cps[begin].begin : s.size();
  size_t to = end < cps.size() ? cps[end].begin : s.size();
  return s.substr(from, to - from);
}

std::vector<std::string> code_points(const std::string &s) {
  std::vector<std::string> out;
  for (const CodePoint &c : decode(s))
    out.push_back(s.substr(c.begin, c.size));
  return out;
}

// Python's str.isspace(): White_Space and the separators U+001C..U+001F.
bool python_space(uint32_t cp) {
  return unicode::is_white_space(cp) || (cp >= 0x1C && cp <= 0x1F);
}

// Python's str.strip/lstrip/rstrip: `chars` (none: whitespace) is a set of
// code points.
std::string strip(const std::string &s, const std::string *chars, bool left, bool right) {
  std::vector<uint32_t> set;
  if (chars)
    for (const CodePoint &c : decode(*chars))
      set.push_back(c.value);
  auto strippable = [&](const CodePoint &c) {
    return chars ? std::find(set.begin(), set.end(), c.value) != set.end() : python_space(c.value);
  };
  std::vector<CodePoint> cps = decode(s);
  size_t begin = 0, end = cps.size();
  while (left && begin < end && strippable(cps[begin])) ++begin;
  while (right && end > begin && strippable(cps[end - 1])) --end;
  return text(s, cps, begin, end);
}

bool values_equal(const Value &a, const Value &b) {
  if (is_undefined(a) || is_undefined(b))
    return is_undefined(a) && is_undefined(b);
  return a == b;
}

class Renderer {
public:
  explicit Renderer(const Value &context) {
    scopes_.emplace_back();
    for (const auto &[k, v] : context.items())
      scopes_.back()[k] = v;
  }

  enum class Flow { Normal, Break, Continue };

  Flow run(const std::vector<Node> &nodes, std::string &out) {
    for (const Node &n : nodes) {
      Flow flow = run(n, out);
      if (flow != Flow::Normal)
        return flow;
    }
    return Flow::Normal;
  }

private:
  static constexpr size_t kMaxRange = 100000;
  static constexpr int64_t kMaxIndent = 64; // an output size bound; templates indent 2 or 4
  // A render is untrusted code with a budget. Steps: expressions evaluated,
  // nodes run and loop iterations. Size: no string, list or output over
  // kMaxSize bytes (a list item counts kItemBytes), and at most kMaxBuilt
  // bytes built in all, which bounds the work of the builtins that copy
  // (concatenation, replace, join, range, ...). A loop that doubles a string
  // stops here instead of exhausting memory; a chat prompt is far smaller.
  static constexpr uint64_t kMaxSteps = 1'000'000;
  static constexpr size_t kMaxSize = 32u << 20;
  static constexpr uint64_t kMaxBuilt = 256u << 20;
  static constexpr size_t kItemBytes = 32;

  void step(int line) {
    if (++steps_ > kMaxSteps)
      fail(line, "the template took more than " + std::to_string(kMaxSteps) +
                     " steps to render");
  }
  // A value (or the output) of `size` bytes exists.
  void check_size(int line, size_t size) {
    if (size > kMaxSize)
      fail(line, "the template built a value or output of more than " +
                     std::to_string(kMaxSize) + " bytes");
  }
  // A value of `size` bytes was built.
  void charge(int line, size_t size) {
    check_size(line, size);
    if ((built_ += size) > kMaxBuilt)
      fail(line, "the template built more than " + std::to_string(kMaxBuilt) +
                     " bytes in all");
  }

  Flow run(const Node &n, std::string &out) {
    step(n.line);
    switch (n.kind) {
    case Node::Text:
      out += n.text;
      charge(n.line, n.text.size());
      check_size(n.line, out.size());
      return Flow::Normal;
    case Node::Output: {
      std::string text = to_text(eval(*n.expr));
      charge(n.line, text.size());
      out += text;
      check_size(n.line, out.size());
      return Flow::Normal;
    }
    case Node::If:
      for (const auto &[cond, body] : n.branches)
        if (truthy(eval(*cond)))
          return run(body, out);
      return run(n.else_body, out);
    case Node::Set: {
      Value v = eval(*n.expr);
      if (n.targets.size() == 1) {
        scopes_.back()[n.targets[0]] = std::move(v);
        return Flow::Normal;
      }
      Value *target = lookup(n.targets[0]);
      if (!target || !target->is_object())
        fail(n.line, "cannot set attribute '" + n.targets[1] + "' of '" + n.targets[0] +
                         "' (not a namespace)");
      (*target)[n.targets[1]] = std::move(v);
      return Flow::Normal;
    }
    case Node::For:
      return run_for(n, out);
    case Node::Break:
      return Flow::Break;
    case Node::Continue:
      return Flow::Continue;
    }
    return Flow::Normal;
  }

  Flow run_for(const Node &n, std::string &out) {
    Value iterable = eval(*n.expr);
    std::vector<Value> items;
    if (iterable.is_array()) {
      items.assign(iterable.begin(), iterable.end());
    } else if (iterable.is_object()) {
      for (const auto &[k, v] : iterable.items())
        items.emplace_back(k);
    } else if (iterable.is_string()) {
      for (auto &c : code_points(iterable.get<std::string>()))
        items.emplace_back(std::move(c));
    } else if (!is_undefined(iterable)) {
      fail(n.line, std::string("cannot iterate over ") + type_name(iterable));
    }
    // Each iteration has its own scope: what the body sets does not outlive it.
    auto bind = [&](const Value &item) {
      auto &scope = scopes_.back();
      scope.clear();
      if (n.targets.size() == 1) {
        scope[n.targets[0]] = item;
        return;
      }
      if (!item.is_array() || item.size() != n.targets.size())
        fail(n.line, "cannot unpack " + python_repr(item) + " into " +
                         std::to_string(n.targets.size()) + " loop variables");
      for (size_t k = 0; k < n.targets.size(); ++k)
        scope[n.targets[k]] = item[k];
    };
    scopes_.emplace_back();
    if (n.filter) {
      std::vector<Value> kept;
      for (const auto &item : items) {
        step(n.line);
        bind(item);
        if (truthy(eval(*n.filter)))
          kept.push_back(item);
      }
      items = std::move(kept);
    }
    for (size_t i = 0; i < items.size(); ++i) {
      step(n.line);
      bind(items[i]);
      size_t count = items.size();
      scopes_.back()["loop"] = Value{{"index0", i}, {"index", i + 1},
                                     {"revindex0", count - 1 - i}, {"revindex", count - i},
                                     {"first", i == 0}, {"last", i + 1 == count},
                                     {"length", count}};
      if (run(n.body, out) == Flow::Break)
        break;
    }
    scopes_.pop_back();
    if (items.empty())
      return run(n.else_body, out);
    return Flow::Normal;
  }

  Value *lookup(const std::string &name) {
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
      auto it = scope->find(name);
      if (it != scope->end())
        return &it->second;
    }
    return nullptr;
  }

  std::vector<Value> eval_args(const Expr &e, size_t first) {
    std::vector<Value> args;
    for (size_t i = first; i < e.args.size(); ++i)
      args.push_back(eval(*e.args[i]));
    return args;
  }

  void require_no_kwargs(const Expr &e, const std::string &what) {
    if (!e.kwargs.empty())
      fail(e.line, what + " takes no keyword arguments");
  }

  // An integer as int64 (JSON input may hold larger unsigned ones).
  static int64_t integer(const Expr &e, const Value &v) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      fail(e.line, "integer out of range: " + v.dump());
    return v.get<int64_t>();
  }

  static std::string string_arg(const Expr &e, const std::vector<Value> &args, size_t i,
                                const std::string &what) {
    if (i >= args.size() || !args[i].is_string())
      fail(e.line, what + ": expected a string argument");
    return args[i].get<std::string>();
  }

  // strip()'s and trim's optional characters; none: whitespace.
  static const std::string *chars_arg(const Expr &e, const std::vector<Value> &args,
                                      const std::string &what) {
    if (args.size() > 1)
      fail(e.line, what + " takes at most one argument");
    if (args.empty() || args[0].is_null() || is_undefined(args[0]))
      return nullptr;
    if (!args[0].is_string())
      fail(e.line, what + ": expected a string argument");
    return &args[0].get_ref<const std::string &>();
  }

  Value eval(const Expr &e) {
    step(e.line);
    switch (e.kind) {
    case Expr::Literal:
      return e.value;
    case Expr::Name: {
      Value *v = lookup(e.name);
      return v ? *v : undefined();
    }
    case Expr::Attribute: {
      Value obj = eval(*e.args[0]);
      if (is_undefined(obj))
        fail(e.line, "cannot read attribute '" + e.name + "' of an undefined value");
      if (obj.is_object() && obj.contains(e.name))
        return obj[e.name];
      return undefined();
    }
    case Expr::Item:
      return item(e, eval(*e.args[0]), eval(*e.args[1]));
    case Expr::Slice:
      return slice(e);
    case Expr::Call:
      return call(e);
    case Expr::Filter:
      return filter(e);
    case Expr::Test:
      return test(e) != e.negated;
    case Expr::Unary: {
      Value v = eval(*e.args[0]);
      if (e.name == "not")
        return !truthy(v);
      if (v.is_number_integer()) {
        int64_t x = integer(e, v), negated;
        if (__builtin_sub_overflow(0, x, &negated))
          fail(e.line, "integer overflow");
        return negated;
      }
      if (v.is_number())
        return -v.get<double>();
      fail(e.line, std::string("cannot negate ") + type_name(v));
    }
    case Expr::Binary:
      return binary(e);
    case Expr::Conditional:
      return truthy(eval(*e.args[1])) ? eval(*e.args[0]) : eval(*e.args[2]);
    case Expr::List: {
      Value list = Value::array();
      for (const auto &a : e.args)
        list.push_back(eval(*a));
      return list;
    }
    case Expr::Dict: {
      Value dict = Value::object();
      for (size_t i = 0; i < e.args.size(); i += 2) {
        Value key = eval(*e.args[i]);
        if (!key.is_string())
          fail(e.line, "dict keys must be strings");
        dict[key.get<std::string>()] = eval(*e.args[i + 1]);
      }
      return dict;
    }
    }
    return undefined();
  }

  Value item(const Expr &e, const Value &obj, const Value &key) {
    if (is_undefined(obj))
      fail(e.line, "cannot index an undefined value");
    if (obj.is_object()) {
      if (key.is_string() && obj.contains(key.get<std::string>()))
        return obj[key.get<std::string>()];
      return undefined();
    }
    if ((obj.is_array() || obj.is_string()) && key.is_number_integer()) {
      std::vector<std::string> chars;
      if (obj.is_string())
        chars = code_points(obj.get<std::string>());
      int64_t size = obj.is_array() ? obj.size() : chars.size();
      int64_t i = integer(e, key);
      if (i < 0)
        i += size;
      if (i < 0 || i >= size)
        return undefined();
      return obj.is_array() ? obj[i] : Value(chars[i]);
    }
    return undefined(); // as jinja2: a failed lookup is undefined, not an error
  }

  Value slice(const Expr &e) {
    Value obj = eval(*e.args[0]);
    auto bound = [&](int k) -> std::optional<int64_t> {
      if (!e.args[k])
        return std::nullopt;
      Value v = eval(*e.args[k]);
      if (v.is_null())
        return std::nullopt;
      if (!v.is_number_integer())
        fail(e.line, "slice bounds must be integers");
      return integer(e, v);
    };
    std::vector<Value> items;
    if (obj.is_array())
      items.assign(obj.begin(), obj.end());
    else if (obj.is_string())
      for (auto &c : code_points(obj.get<std::string>()))
        items.emplace_back(std::move(c));
    else
      fail(e.line, std::string("cannot slice ") + type_name(obj));
    auto start = bound(1), stop = bound(2), step_arg = bound(3);
    int64_t n = items.size(), step = step_arg.value_or(1);
    if (step == 0)
      fail(e.line, "slice step cannot be zero");
    // Python's slice.indices().
    auto clamp = [&](std::optional<int64_t> v, int64_t fallback) {
      if (!v)
        return fallback;
      int64_t x = *v < 0 ? *v + n : *v;
      return step > 0 ? std::clamp<int64_t>(x, 0, n) : std::clamp<int64_t>(x, -1, n - 1);
    };
    int64_t lo = clamp(start, step > 0 ? 0 : n - 1), hi = clamp(stop, step > 0 ? n : -1);
    Value out = obj.is_array() ? Value::array() : Value("");
    for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) {
      if (obj.is_array())
        out.push_back(items[i]);
      else
        out.get_ref<std::string &>() += items[i].get<std::string>();
    }
    return out;
  }

  Value call(const Expr &e) {
    const Expr &callee = *e.args[0];
    if (callee.kind == Expr::Name && !lookup(callee.name)) {
      if (callee.name == "raise_exception") {
        auto args = eval_args(e, 1);
        throw ChatTemplateError("chat template raised an exception: " +
                                (args.empty() ? std::string() : to_text(args[0])));
      }
      if (callee.name == "namespace") {
        Value ns = Value::object();
        for (const auto &[k, v] : e.kwargs)
          ns[k] = eval(*v);
        return ns;
      }
      if (callee.name == "strftime_now") { // transformers' global: the local time
        auto args = eval_args(e, 1);
        if (args.size() != 1 || !args[0].is_string())
          fail(e.line, "strftime_now() takes a format string");
        std::time_t now = std::time(nullptr);
        std::tm local{};
        localtime_r(&now, &local);
        char buf[256];
        size_t n = std::strftime(buf, sizeof buf, args[0].get<std::string>().c_str(), &local);
        return std::string(buf, n);
      }
      if (callee.name == "range") {
        auto args = eval_args(e, 1);
        for (const auto &a : args)
          if (!a.is_number_integer())
            fail(e.line, "range() takes integers");
        int64_t lo = args.size() > 1 ? integer(e, args[0]) : 0;
        int64_t hi = args.empty() ? 0 : integer(e, args[args.size() > 1 ? 1 : 0]);
        int64_t step = args.size() > 2 ? integer(e, args[2]) : 1;
        if (step == 0)
          fail(e.line, "range() step cannot be zero");
        Value list = Value::array();
        for (int64_t i = lo; step > 0 ? i < hi : i > hi;) {
          if (list.size() == kMaxRange) // the limit of jinja2's sandbox, which transformers uses
            fail(e.line, "range() of more than " + std::to_string(kMaxRange) + " items");
          list.push_back(i);
          if (__builtin_add_overflow(i, step, &i))
            break;
        }
        charge(e.line, list.size() * kItemBytes);
        return list;
      }
    }
    if (callee.kind != Expr::Attribute)
      fail(e.line, "unsupported function call (supported: raise_exception, namespace, "
                   "range, strftime_now, and string/dict methods)");
    Value obj = eval(*callee.args[0]);
    const std::string &m = callee.name;
    require_no_kwargs(e, m + "()");
    auto args = eval_args(e, 1);
    if (obj.is_string()) {
      const std::string &s = obj.get_ref<const std::string &>();
      if (m == "strip" || m == "lstrip" || m == "rstrip")
        return strip(s, chars_arg(e, args, m + "()"), m != "rstrip", m != "lstrip");
      if (m == "startswith")
        return s.compare(0, string_arg(e, args, 0, m).size(), args[0].get<std::string>()) == 0;
      if (m == "endswith") {
        std::string suffix = string_arg(e, args, 0, m);
        return s.size() >= suffix.size() &&
               s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
      }
      if (m == "upper" || m == "lower") {
        charge(e.line, s.size());
        std::string out = s;
        for (char &c : out)
          if (c >= 'a' && c <= 'z' && m == "upper") c -= 32;
          else if (c >= 'A' && c <= 'Z' && m == "lower") c += 32;
        return out;
      }
      if (m == "split") {
        charge(e.line, s.size());
        return split(e, s, args);
      }
      if (m == "replace") {
        std::string from = string_arg(e, args, 0, m), to = string_arg(e, args, 1, m);
        if (from.empty())
          fail(e.line, "replace() with an empty pattern is not supported");
        std::string out;
        size_t pos = 0;
        for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
          out.append(s, pos, hit - pos).append(to);
          check_size(e.line, out.size());
        }
        out.append(s, pos, std::string::npos);
        charge(e.line, out.size());
        return out;
      }
    } else if (obj.is_object()) {
      if (m == "get") {
        std::string key = string_arg(e, args, 0, m);
        return obj.contains(key) ? obj[key] : (args.size() > 1 ? args[1] : Value());
      }
      if (m == "items" || m == "keys" || m == "values") {
        Value list = Value::array();
        for (const auto &[k, v] : obj.items())
          list.push_back(m == "items" ? Value::array({k, v}) : m == "keys" ? Value(k) : v);
        return list;
      }
    }
    fail(e.line, "unsupported method '" + m + "' on " + type_name(obj));
  }

  Value split(const Expr &e, const std::string &s, const std::vector<Value> &args) {
    Value parts = Value::array();
    if (args.empty() || args[0].is_null()) { // runs of whitespace
      std::vector<CodePoint> cps = decode(s);
      for (size_t i = 0, j; i < cps.size(); i = j) {
        for (j = i; j < cps.size() && !python_space(cps[j].value);)
          ++j;
        if (j > i)
          parts.push_back(text(s, cps, i, j));
        j += j < cps.size();
      }
      return parts;
    }
    std::string sep = string_arg(e, args, 0, "split");
    if (sep.empty())
      fail(e.line, "split(): empty separator");
    int64_t max_splits = args.size() > 1 && args[1].is_number_integer() ? args[1].get<int64_t>() : -1;
    size_t pos = 0;
    for (size_t hit; max_splits != 0 && (hit = s.find(sep, pos)) != std::string::npos;
         pos = hit + sep.size(), --max_splits)
      parts.push_back(s.substr(pos, hit - pos));
    parts.push_back(s.substr(pos));
    return parts;
  }

  Value filter(const Expr &e) {
    Value v = eval(*e.args[0]);
    auto args = eval_args(e, 1);
    const std::string &f = e.name;
    if (f == "tojson") {
      int indent = -1;
      for (const auto &[k, arg] : e.kwargs) {
        Value a = eval(*arg);
        if (k != "indent" || !a.is_number_integer())
          fail(e.line, "tojson: only an integer 'indent' argument is supported");
        int64_t spaces = integer(e, a);
        if (spaces > kMaxIndent)
          fail(e.line, "tojson: indent above " + std::to_string(kMaxIndent) + " is not supported");
        indent = static_cast<int>(std::max<int64_t>(spaces, 0)); // as Python: none below 0
      }
      std::string out;
      to_json(v, indent, 0, out);
      return out;
    }
    require_no_kwargs(e, "filter '" + f + "'");
    if (f == "default" || f == "d") {
      bool boolean = args.size() > 1 && truthy(args[1]);
      return (boolean ? truthy(v) : !is_undefined(v)) ? v : (args.empty() ? Value("") : args[0]);
    }
    if (f == "string")
      return to_text(v);
    if (f == "trim") // jinja2 trims str(v)
      return strip(to_text(v), chars_arg(e, args, "trim"), true, true);
    if (is_undefined(v) && (f == "length" || f == "count"))
      return 0;
    if (f == "length" || f == "count") {
      if (v.is_string())
        return code_points(v.get<std::string>()).size();
      if (v.is_array() || v.is_object())
        return v.size();
    } else if ((f == "upper" || f == "lower" || f == "capitalize") && v.is_string()) {
      std::string s = v.get<std::string>();
      for (size_t i = 0; i < s.size(); ++i) {
        bool up = f == "upper" || (f == "capitalize" && i == 0);
        if (up && s[i] >= 'a' && s[i] <= 'z') s[i] -= 32;
        else if (!up && s[i] >= 'A' && s[i] <= 'Z') s[i] += 32;
      }
      return s;
    } else if ((f == "first" || f == "last") && v.is_array()) {
      return v.empty() ? undefined() : f == "first" ? v.front() : v.back();
    } else if (f == "join" && v.is_array()) {
      std::string sep = args.empty() ? "" : to_text(args[0]), out;
      for (size_t i = 0; i < v.size(); ++i) {
        out += (i ? sep : "") + to_text(v[i]);
        check_size(e.line, out.size());
      }
      charge(e.line, out.size());
      return out;
    } else if (f == "items" && v.is_object()) {
      Value list = Value::array();
      for (const auto &[k, item] : v.items())
        list.push_back(Value::array({k, item}));
      return list;
    } else if (f != "length" && f != "count" && f != "upper" && f != "lower" &&
               f != "capitalize" && f != "first" && f != "last" && f != "join" && f != "items") {
      fail(e.line, "unsupported filter '" + f +
                       "' (supported: tojson, default, string, length, count, trim, upper, "
                       "lower, capitalize, first, last, join, items)");
    }
    fail(e.line, "filter '" + f + "' does not apply to " + type_name(v));
  }

  bool test(const Expr &e) {
    Value v = eval(*e.args[0]);
    const std::string &t = e.name;
    if (t == "defined") return !is_undefined(v);
    if (t == "undefined") return is_undefined(v);
    if (t == "none") return v.is_null();
    if (t == "string") return v.is_string();
    if (t == "number") return v.is_number();
    if (t == "integer") return v.is_number_integer();
    if (t == "float") return v.is_number_float();
    if (t == "boolean") return v.is_boolean();
    if (t == "true") return v.is_boolean() && v.get<bool>();
    if (t == "false") return v.is_boolean() && !v.get<bool>();
    if (t == "mapping") return v.is_object();
    if (t == "sequence" || t == "iterable") return v.is_array() || v.is_string() || v.is_object();
    fail(e.line, "unsupported test '" + t +
                     "' (supported: defined, undefined, none, string, number, integer, float, "
                     "boolean, true, false, mapping, sequence, iterable)");
  }

  Value binary(const Expr &e) {
    const std::string &op = e.name;
    Value a = eval(*e.args[0]);
    if (op == "and")
      return truthy(a) ? eval(*e.args[1]) : a;
    if (op == "or")
      return truthy(a) ? a : eval(*e.args[1]);
    Value b = eval(*e.args[1]);
    if (op == "==") return values_equal(a, b);
    if (op == "!=") return !values_equal(a, b);
    if (op == "~") {
      std::string x = to_text(a), y = to_text(b);
      charge(e.line, x.size() + y.size());
      return x + y;
    }
    if (op == "in" || op == "not in") {
      bool found;
      if (b.is_string() && a.is_string())
        found = b.get_ref<const std::string &>().find(a.get<std::string>()) != std::string::npos;
      else if (b.is_array())
        found = std::any_of(b.begin(), b.end(), [&](const Value &x) { return values_equal(x, a); });
      else if (b.is_object())
        found = a.is_string() && b.contains(a.get<std::string>());
      else if (is_undefined(b))
        found = false;
      else
        fail(e.line, std::string("'in' does not apply to ") + type_name(b));
      return found == (op == "in");
    }
    if (op == "+" && a.is_string() && b.is_string()) {
      charge(e.line, a.get_ref<const std::string &>().size() +
                         b.get_ref<const std::string &>().size());
      return a.get<std::string>() + b.get<std::string>();
    }
    if (op == "+" && a.is_array() && b.is_array()) {
      charge(e.line, (a.size() + b.size()) * kItemBytes);
      Value out = a;
      out.insert(out.end(), b.begin(), b.end());
      return out;
    }
    if (a.is_string() && b.is_string() && (op == "<" || op == ">" || op == "<=" || op == ">=")) {
      int c = a.get<std::string>().compare(b.get<std::string>());
      return op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0;
    }
    if (!a.is_number() || !b.is_number() || a.is_boolean() || b.is_boolean())
      fail(e.line, "unsupported operand types for " + op + ": " + type_name(a) + " and " +
                       type_name(b));
    if (a.is_number_integer() && b.is_number_integer() && op != "/") {
      int64_t x = integer(e, a), y = integer(e, b), r = 0;
      if ((op == "//" || op == "%") && y == 0)
        fail(e.line, "division by zero");
      // Python's integers do not overflow; int64 ones stop with an error.
      if ((op == "+" && __builtin_add_overflow(x, y, &r)) ||
          (op == "-" && __builtin_sub_overflow(x, y, &r)) ||
          (op == "*" && __builtin_mul_overflow(x, y, &r)) ||
          (op == "//" && x == INT64_MIN && y == -1))
        fail(e.line, "integer overflow");
      if (op == "+" || op == "-" || op == "*") return r;
      if (op == "%" && y == -1) return 0;
      if (op == "//") return x / y - ((x % y != 0) && ((x < 0) != (y < 0)));
      if (op == "%") { // the sign of the divisor, as in Python
        r = x % y;
        return r != 0 && (r < 0) != (y < 0) ? r + y : r;
      }
      if (op == "<") return x < y;
      if (op == ">") return x > y;
      if (op == "<=") return x <= y;
      if (op == ">=") return x >= y;
    }
    double x = a.get<double>(), y = b.get<double>();
    if ((op == "/" || op == "//" || op == "%") && y == 0)
      fail(e.line, "division by zero");
    if (op == "+") return x + y;
    if (op == "-") return x - y;
    if (op == "*") return x * y;
    if (op == "/") return x / y;
    if (op == "//") return std::floor(x / y);
    if (op == "%") return x - y * std::floor(x / y);
    if (op == "<") return x < y;
    if (op == ">") return x > y;
    if (op == "<=") return x <= y;
    return x >= y;
  }

  std::vector<std::unordered_map<std::string, Value>> scopes_;
  uint64_t steps_ = 0;
  uint64_t built_ = 0;
};

} // namespace

std::string render(const Template &t, const Value &context) {
  std::string out;
  Renderer(context).run(t.nodes, out);
  return out;
}

} // namespace llmserve::jinja
