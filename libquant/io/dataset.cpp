#include "libquant/io/dataset.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <optional>

#include "libquant/io/image.h"
#include "libquant/io/npy.h"
#include "libquant/io/tensor_proto.h"

namespace quant::io {
namespace fs = std::filesystem;
namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// k of "input_<k>.pb", if the name has that form.
std::optional<size_t> input_pb_index(const std::string& name) {
  constexpr std::string_view kPrefix = "input_";
  if (name.rfind(kPrefix, 0) != 0 || !ends_with(name, ".pb")) return std::nullopt;
  std::string_view digits(name.data() + kPrefix.size(), name.size() - kPrefix.size() - 3);
  size_t k = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), k);
  if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size()) return std::nullopt;
  return k;
}

// Entries of `dir` sorted by name, hidden ones skipped.
Expected<std::vector<fs::directory_entry>> sorted_entries(const std::string& dir) {
  std::error_code ec;
  std::vector<fs::directory_entry> out;
  fs::directory_iterator it(dir, ec);
  if (ec) return Status::bad_input(dir + ": cannot list the directory (" + ec.message() + ")");
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) return Status::bad_input(dir + ": cannot list the directory (" + ec.message() + ")");
    if (it->path().filename().string().rfind('.', 0) == 0) continue;
    out.push_back(*it);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.path().filename().string() < b.path().filename().string(); });
  return out;
}

// The input files of one sample folder; empty when it holds none.
Expected<SampleSource> folder_sample(const fs::path& folder) {
  SampleSource s;
  s.stem = folder.filename().string();
  QT_ASSIGN_OR_RETURN(auto entries, sorted_entries(folder.string()));
  for (const auto& e : entries) {
    std::error_code ec;
    if (!e.is_regular_file(ec)) continue;
    std::string name = e.path().filename().string();
    if (ends_with(name, ".npy")) {
      s.files.emplace_back(name.substr(0, name.size() - 4), e.path().string());
    } else if (auto k = input_pb_index(name)) {
      s.files.emplace_back("#" + std::to_string(*k), e.path().string());
    }
  }
  return s;
}

}  // namespace

Expected<std::vector<SampleSource>> list_samples(const std::string& dir, const DatasetOptions& options) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return Status::bad_input(dir + ": data directory does not exist");
  if (!fs::is_directory(dir, ec)) return Status::bad_input(dir + ": is not a directory (--data expects a directory)");
  QT_ASSIGN_OR_RETURN(auto entries, sorted_entries(dir));

  // The three forms, each with the first entry seen, for the "mixes" error.
  std::vector<SampleSource> files, images, folders;
  std::string first_file, first_image;
  for (const auto& e : entries) {
    std::string name = e.path().filename().string();
    if (e.is_directory(ec)) {
      QT_ASSIGN_OR_RETURN(SampleSource s, folder_sample(e.path()));
      if (s.files.empty() && options.model_has_inputs)
        return Status::bad_input(e.path().string() + ": sample folder holds no <input-name>.npy or input_<k>.pb files");
      folders.push_back(std::move(s));
    } else if (ends_with(name, ".npy") && e.is_regular_file(ec)) {
      if (first_file.empty()) first_file = name;
      files.push_back({name.substr(0, name.size() - 4), {{"#0", e.path().string()}}});
    } else if (is_image_file(name) && e.is_regular_file(ec)) {
      if (first_image.empty()) first_image = name;
      images.push_back({name.substr(0, name.rfind('.')), {{"#0", e.path().string()}}});
    }
  }
  const int forms = !files.empty() + !images.empty() + !folders.empty();
  if (forms > 1) {
    std::vector<std::string> seen;
    if (!files.empty()) seen.push_back(".npy files (" + first_file + ")");
    if (!images.empty()) seen.push_back("images (" + first_image + ")");
    if (!folders.empty()) seen.push_back("sample folders (" + folders.front().stem + "/)");
    return Status::bad_input(dir + ": mixes " + seen[0] + " with " + seen[1] + "; use one form per directory");
  }
  std::vector<SampleSource> samples = !files.empty() ? std::move(files) : !images.empty() ? std::move(images) : std::move(folders);
  if (samples.empty())
    return Status::bad_input(dir + ": no samples (expected .npy files, images, or sample folders holding <input-name>.npy or input_<k>.pb)");
  if (options.limit > 0 && samples.size() > options.limit) samples.resize(options.limit);
  return samples;
}

Expected<std::vector<Tensor>> load_sample(const SampleSource& sample, const std::vector<std::string>& input_names,
                                          const ImageOptions& image) {
  auto list_inputs = [&] {
    std::string s;
    for (size_t i = 0; i < input_names.size(); ++i) s += (i ? ", " : "") + input_names[i];
    return s;
  };
  std::vector<std::optional<Tensor>> slots(input_names.size());
  std::vector<const std::string*> given_by(input_names.size(), nullptr);
  for (const auto& [key, path] : sample.files) {
    size_t index = 0;
    if (!key.empty() && key[0] == '#') {
      auto [ptr, ec] = std::from_chars(key.data() + 1, key.data() + key.size(), index);
      if (ec != std::errc() || ptr != key.data() + key.size() || index >= input_names.size()) {
        return Status::bad_input(path + ": gives input #" + key.substr(1) + " but the model has " +
                                 std::to_string(input_names.size()) + " input(s): " + list_inputs());
      }
    } else {
      auto it = std::find(input_names.begin(), input_names.end(), key);
      if (it == input_names.end())
        return Status::bad_input(path + ": the model has no input named '" + key + "' (model inputs: " + list_inputs() + ")");
      index = static_cast<size_t>(it - input_names.begin());
    }
    if (given_by[index])
      return Status::bad_input(path + ": input '" + input_names[index] + "' is already given by " + *given_by[index]);
    given_by[index] = &path;
    Expected<Tensor> t = ends_with(path, ".pb") ? read_tensor_pb(path)
                         : is_image_file(path)  ? read_image(path, image)
                                                : read_npy(path);
    if (!t) return t.status();
    slots[index] = std::move(t).value();
  }
  std::vector<Tensor> out;
  out.reserve(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!slots[i]) {
      return Status::bad_input("sample '" + sample.stem + "': no file for model input '" + input_names[i] + "' (expected " +
                               input_names[i] + ".npy or input_" + std::to_string(i) + ".pb; model inputs: " +
                               list_inputs() + ")");
    }
    out.push_back(std::move(*slots[i]));
  }
  return out;
}

}  // namespace quant::io
