#include "s3/config.hpp"

#include "s3/sigv4.hpp"
#include "util/files.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <memory>

namespace bufferlock::s3 {

namespace {

constexpr const char* default_region = "us-east-1";

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string aws_file(const EnvLookup& env, const char* variable, const char* name) {
  if (auto path = env_text(env, variable)) return *path;
  if (auto home = env_text(env, "HOME")) return *home + "/.aws/" + name;
  return {};
}

// The whole file; nullopt when it does not exist; an error text otherwise.
std::variant<std::optional<std::string>, std::string> read_text(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "re"), &std::fclose);
  if (!f) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<std::string>();
    return "cannot read " + path + ": " + errno_text(errno);
  }
  std::string text;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) text.append(buf, n);
  if (std::ferror(f.get())) return "cannot read " + path + ": " + errno_text(errno);
  return std::optional<std::string>(std::move(text));
}

// An endpoint URL's scheme://HOST[:PORT], or why it is not one.
std::variant<Endpoint, std::string> parse_endpoint(const char* variable, std::string_view url) {
  const std::string bad = std::string(variable) + " is not an http:// or https:// URL with a host and no path";
  const std::size_t colon = url.find("://");
  if (colon == std::string_view::npos) return bad;
  const std::string_view scheme = url.substr(0, colon);
  std::string_view host = url.substr(colon + 3);
  if (scheme != "http" && scheme != "https") return bad;
  while (host.ends_with('/')) host.remove_suffix(1);
  if (host.empty() || host.find_first_of("/?#@ \t") != std::string_view::npos) return bad;
  return Endpoint{std::string(scheme) + "://" + std::string(host), true};
}

} // namespace

std::optional<std::string> env_text(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

std::string profile_name(const EnvLookup& env) { return env_text(env, "AWS_PROFILE").value_or("default"); }

std::string credentials_file(const EnvLookup& env) {
  return aws_file(env, "AWS_SHARED_CREDENTIALS_FILE", "credentials");
}

std::string config_file(const EnvLookup& env) { return aws_file(env, "AWS_CONFIG_FILE", "config"); }

std::optional<IniSection> ini_section(std::string_view text, std::string_view section) {
  std::optional<IniSection> found;
  bool inside = false;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view raw = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      inside = trim(line.substr(1, line.size() - 2)) == section;
      if (inside && !found) found.emplace();
      continue;
    }
    // An indented line belongs to a nested setting (s3 =\n  addressing_style = path).
    if (!inside || std::isspace(static_cast<unsigned char>(raw.front()))) continue;
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    (*found)[lower(trim(line.substr(0, eq)))] = std::string(trim(line.substr(eq + 1)));
  }
  return found;
}

std::variant<std::optional<IniSection>, std::string> read_ini_section(const std::string& path,
                                                                      std::string_view section) {
  auto text = read_text(path);
  if (text.index() == 1) return std::get<1>(std::move(text));
  const auto& content = std::get<0>(text);
  if (!content) return std::optional<IniSection>();
  return ini_section(*content, section);
}

std::variant<std::string, std::string> load_region(const EnvLookup& env) {
  using Result = std::variant<std::string, std::string>;
  for (const char* variable : {"AWS_REGION", "AWS_DEFAULT_REGION"})
    if (auto region = env_text(env, variable)) return Result(std::in_place_index<0>, *region);
  const std::string path = config_file(env);
  const std::string profile = profile_name(env);
  if (!path.empty()) {
    auto section = read_ini_section(path, profile == "default" ? profile : "profile " + profile);
    if (section.index() == 1) return Result(std::in_place_index<1>, std::get<1>(std::move(section)));
    const auto& keys = std::get<0>(section);
    if (keys && keys->contains("region") && !keys->at("region").empty())
      return Result(std::in_place_index<0>, keys->at("region"));
  }
  return Result(std::in_place_index<0>, default_region);
}

std::variant<Endpoint, std::string> load_endpoint(const EnvLookup& env, const std::string& region) {
  for (const char* variable : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"})
    if (auto url = env_text(env, variable)) return parse_endpoint(variable, *url);
  return Endpoint{"https://s3." + region + ".amazonaws.com", false};
}

Target target(const Endpoint& endpoint, std::string_view bucket, std::string_view key) {
  const std::size_t colon = endpoint.base.find("://");
  const std::string scheme = endpoint.base.substr(0, colon + 3);
  std::string host = endpoint.base.substr(colon + 3);
  std::string path = "/";
  if (endpoint.path_style || bucket.find('.') != std::string_view::npos) {
    path += bucket; // the bucket itself (a listing) as /BUCKET, as the AWS tools send it
    if (!key.empty()) path += "/";
  } else {
    host = std::string(bucket) + "." + host;
  }
  path += key;
  return Target{host, path, scheme + host + encode_path(path)};
}

} // namespace bufferlock::s3
