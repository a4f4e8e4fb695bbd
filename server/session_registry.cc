#include "server/session_registry.h"

#include <algorithm>
#include <filesystem>
#include <random>
#include <system_error>
#include <thread>

#include <spdlog/spdlog.h>

#include "engine/io/model_loader.h"
#include "server/conversions.h"
#include "server/state_publisher.h"
#include "server/udp_endpoint.h"

namespace hilsim::server {

namespace fs = std::filesystem;

namespace {

ServerSession::Token randomToken() {
  // std::random_device reads the kernel's CSPRNG (getrandom) on Linux.
  std::random_device source;
  ServerSession::Token token;
  for (std::size_t i = 0; i < token.size(); i += 4) {
    const std::uint32_t word = source();
    for (std::size_t k = 0; k < 4; ++k) token[i + k] = static_cast<std::uint8_t>(word >> (8 * k));
  }
  return token;
}

// 128 random bits as 32 hexadecimal digits: printable, so that it travels as gRPC metadata.
std::string randomSecret() {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string secret;
  for (const std::uint8_t byte : randomToken()) {
    secret += kDigits[byte >> 4];
    secret += kDigits[byte & 15];
  }
  return secret;
}

grpc::Status invalid(std::string message) {
  return {grpc::StatusCode::INVALID_ARGUMENT, std::move(message)};
}

std::string listNames(const v1::ListModelsResponse& models) {
  std::string names;
  for (const v1::BundledModel& m : models.models()) names += (names.empty() ? "" : ", ") + m.name();
  return names;
}

double micros(std::int64_t ns) { return static_cast<double>(ns) * 1e-3; }

// What a model may ask of the loaders here (docs/SERVER.md, "Bounded work per request").
ModelLimits modelLimits(const ServerConfig& config) {
  ModelLimits limits;
  limits.max_text_bytes = config.max_model_text_bytes;
  limits.max_bodies = config.max_model_bodies;
  limits.max_modes = config.max_model_modes;
  limits.max_beam_elements = config.max_beam_elements;
  limits.max_flexible_entries = config.max_flexible_entries;
  // a session takes no more: a larger model is refused before its flexible bodies are built
  limits.max_dofs = rt::kMaxCoordinates;
  // twice the coordinates a session takes: a real mechanism has far fewer independent rows, and
  // assembling 256 rows costs a few ms per Levenberg–Marquardt step
  limits.max_constraint_rows = 2 * rt::kMaxCoordinates;
  // a client must never make the server read its other files (or wait on a pipe)
  limits.files_inside_base_directory = true;
  return limits;
}

// A loader's message quotes the model text (names, values): kept to a size that fits a status.
std::string clipped(std::string message) {
  constexpr std::size_t kMaxMessageBytes = 1024;
  if (message.size() <= kMaxMessageBytes) return message;
  std::size_t cut = kMaxMessageBytes;
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
  message.resize(cut);
  return message + "…";
}


// The model files of models.directory, by name (the file's stem), with the first extension of
// modelFileExtensions() where one name has several.
std::map<std::string, std::string> directoryModels(const std::string& directory) {
  const auto rankOf = [](const fs::path& path) {
    const auto extensions = modelFileExtensions();
    return std::find(extensions.begin(), extensions.end(), path.extension().string()) -
           extensions.begin();
  };
  const auto not_a_model = static_cast<std::ptrdiff_t>(modelFileExtensions().size());
  std::map<std::string, std::string> files;
  if (directory.empty()) return files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(directory, ec)) {
    const fs::path& path = entry.path();
    if (!entry.is_regular_file(ec) || rankOf(path) == not_a_model) continue;
    auto [it, inserted] = files.emplace(path.stem().string(), path.string());
    if (!inserted && rankOf(path) < rankOf(it->second)) it->second = path.string();
  }
  return files;
}

}  // namespace

SessionRegistry::SessionRegistry(const ServerConfig& config, rt::EventLogger* events)
    : config_(config),
      events_(events),
      shared_(config.workers.count > 0 ? std::make_shared<SharedWorkers>(config.workers) : nullptr),
      next_udp_port_(config.udp_port_first) {
  // libsodium draws the UDP keys (and times the tags): started once, before any session
  if (!udp::initialize()) throw std::runtime_error("libsodium cannot start: no UDP keys");
  // the bundled models and the files of models.directory; a file there of a bundled name
  // replaces the bundled model
  std::map<std::string, std::string> sources;  // name → what loadModel reads
  for (const std::string& name : bundledModelNames()) sources[name] = name;
  for (auto& [name, path] : directoryModels(config.model_directory)) sources[name] = path;
  std::vector<std::string> names = bundledModelNames();
  for (const auto& [name, source] : sources) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  const std::string preferred = config.default_model.empty() ? defaultModelName()
                                                             : config.default_model;
  if (auto it = std::find(names.begin(), names.end(), preferred); it != names.end()) {
    std::rotate(names.begin(), it, it + 1);
  }
  for (const std::string& name : names) {
    const std::string& source = sources[name];
    try {
      // the limits of a request: a model listed is a model CreateSession accepts
      auto model = std::make_shared<const Model>(hilsim::loadModel(source, modelLimits(config)));
      for (const std::string& warning : model->load_warnings) {
        spdlog::warn("model '{}': {}", name, warning);
      }
      v1::BundledModel* entry = bundled_.add_models();
      entry->set_name(name);
      entry->set_is_default(name == preferred);
      *entry->mutable_info() = describeModel(*model, name);
      bundled_models_.emplace(name, std::move(model));
    } catch (const std::exception& e) {
      spdlog::warn("model '{}' does not load and is not offered: {}", name, e.what());
      unloadable_models_.emplace(name, e.what());
    }
  }
  const std::string default_path = bundledModelPath(preferred);
  model_directory_ = !config.model_directory.empty() ? config.model_directory
                     : default_path.empty()          ? std::string()
                                             : fs::path(default_path).parent_path().string();
  lease_thread_ = std::thread([this] {
    constexpr std::chrono::milliseconds kLeaseCheckInterval{250};
    std::unique_lock lock(lease_mutex_);
    while (!lease_wake_.wait_for(lock, kLeaseCheckInterval, [this] { return lease_stop_; })) {
      lock.unlock();
      try {
        closeIdleSessions();
      } catch (const std::exception& e) {  // a thread's exception would end the process
        spdlog::error("lease check: {}", e.what());
      }
      lock.lock();
    }
  });
}

SessionRegistry::~SessionRegistry() {
  {
    std::lock_guard lock(lease_mutex_);
    lease_stop_ = true;
  }
  lease_wake_.notify_all();
  if (lease_thread_.joinable()) lease_thread_.join();
  closeAll();
}

int SessionRegistry::closeIdleSessions() {
  std::vector<std::pair<std::shared_ptr<ServerSession>, double>> expired;
  for (const std::shared_ptr<ServerSession>& session : list()) {
    const double timeout = session->idleTimeout();
    if (timeout <= 0.0) continue;
    const double idle = session->idleSeconds();
    if (idle > timeout) expired.emplace_back(session, idle);
  }
  int closed = 0;
  for (const auto& [session, idle] : expired) {
    spdlog::info("session {} '{}' (owner {}): lease ran out, idle {:.1f} s of its {:g} s; closing",
                 session->id(), session->name(), session->owner(), idle, session->idleTimeout());
    v1::SessionStats final_stats;
    if (close(session->id(), &final_stats)) ++closed;
  }
  return closed;
}

namespace {

// ModelSource's URDF options, checked: an unknown enum value, or an armature out of range or
// without its policy, is INVALID_ARGUMENT naming the field.
grpc::Status urdfOptionsFrom(const v1::ModelSource& source, UrdfOptions* options) {
  options->floating_base = source.floating_base();
  switch (source.inertia()) {
    case v1::INERTIA_POLICY_UNSPECIFIED:
    case v1::INERTIA_POLICY_AS_GIVEN: options->inertia = InertiaPolicy::kAsGiven; break;
    case v1::INERTIA_POLICY_BALANCE: options->inertia = InertiaPolicy::kBalance; break;
    case v1::INERTIA_POLICY_STRICT: options->inertia = InertiaPolicy::kStrict; break;
    default: return invalid("model.inertia: unknown value");
  }
  const double armature = source.massless_armature();
  switch (source.massless()) {
    case v1::MASSLESS_POLICY_UNSPECIFIED:
    case v1::MASSLESS_POLICY_REFUSE: options->massless = MasslessPolicy::kRefuse; break;
    case v1::MASSLESS_POLICY_WELD: options->massless = MasslessPolicy::kWeld; break;
    case v1::MASSLESS_POLICY_ARMATURE:
      // the range parseMasslessPolicy accepts: a rotor heavier than 1e6 kg·m² is a typo
      if (!(armature > 0.0 && armature <= 1e6)) {
        return invalid("model.massless_armature: " + std::to_string(armature) +
                       " with MASSLESS_POLICY_ARMATURE must be > 0 and <= 1e6 [kg·m² or kg]");
      }
      options->massless = MasslessPolicy::kArmature;
      options->massless_armature = armature;
      return grpc::Status::OK;
    default: return invalid("model.massless: unknown value");
  }
  if (armature != 0.0) {
    return invalid("model.massless_armature is set without massless = MASSLESS_POLICY_ARMATURE");
  }
  return grpc::Status::OK;
}

}  // namespace

grpc::Status SessionRegistry::loadModel(const v1::ModelSource& source,
                                        std::shared_ptr<const Model>* model,
                                        std::string* name) const {
  if (source.source_name().size() > kMaxNameBytes) {
    return invalid("model.source_name: " + std::to_string(source.source_name().size()) +
                   " bytes, allowed at most " + std::to_string(kMaxNameBytes));
  }
  const std::string source_name = source.source_name().empty() ? "<request>" : source.source_name();
  UrdfOptions options;
  if (grpc::Status status = urdfOptionsFrom(source, &options); !status.ok()) return status;
  // what only a URDF reads: a YAML model says it in its wrapper
  const bool urdf_options = options.any() || source.inertia() != v1::INERTIA_POLICY_UNSPECIFIED ||
                            source.massless() != v1::MASSLESS_POLICY_UNSPECIFIED;
  if (urdf_options && source.source_case() == v1::ModelSource::kYaml) {
    return invalid("model.floating_base, inertia and massless apply to a URDF; a YAML model says "
                   "them in its wrapper (floating_base:, inertia:, massless:)");
  }
  if (urdf_options && source.source_case() == v1::ModelSource::kMjcf) {
    return invalid("model.floating_base, inertia and massless apply to URDF and SDFormat; an MJCF "
                   "model names its free joints and inertias itself");
  }
  try {
    switch (source.source_case()) {
      case v1::ModelSource::kBundledName: {
        const std::string& requested = source.bundled_name();
        if (urdf_options) {
          // the listed model was read with the defaults: read its file again with these options
          std::string path = directoryModelPath(requested);
          if (path.empty() && (bundled_models_.count(requested) > 0 ||
                                unloadable_models_.count(requested) > 0))
            path = bundledModelPath(requested);
          if (!path.empty() && !path.ends_with(".urdf") && !path.ends_with(".sdf")) {
            return invalid("model.floating_base, inertia and massless apply to URDF and "
                           "SDFormat; model '" + requested + "' is " +
                           (path.ends_with(".xml") ? "an MJCF model, which says them itself"
                                                   : "a YAML model, whose wrapper says them"));
          }
          if (!path.empty()) {
            *model = std::make_shared<const Model>(
                hilsim::loadModel(path, options, modelLimits(config_)));
            for (const std::string& warning : (*model)->load_warnings) {
              spdlog::warn("model '{}': {}", requested, warning);
            }
            *name = requested;
            return grpc::Status::OK;
          }
        }
        // (a file that does not load with the defaults may with the options above)
        if (const auto broken = unloadable_models_.find(requested);
            broken != unloadable_models_.end()) {
          return invalid(clipped("model '" + requested + "' does not load: " + broken->second));
        }
        if (const auto bundled = bundled_models_.find(requested); bundled != bundled_models_.end()) {
          *model = bundled->second;
          *name = requested;
          return grpc::Status::OK;
        }
        // a file put in models.directory after start-up: loaded now, for this session
        // (create() holds the load lock for it, as for a model text)
        if (const std::string path = directoryModelPath(requested); !path.empty()) {
          *model = std::make_shared<const Model>(hilsim::loadModel(path, modelLimits(config_)));
          for (const std::string& warning : (*model)->load_warnings) {
            spdlog::warn("model '{}': {}", requested, warning);
          }
          *name = requested;
          return grpc::Status::OK;
        }
        return {grpc::StatusCode::NOT_FOUND,
                clipped("unknown model '" + requested.substr(0, kMaxNameBytes) + "' (known: " +
                        listNames(bundled_) +
                        (config_.model_directory.empty()
                             ? std::string(")")
                             : "; or a <name>.urdf, .yaml or .yml file in " +
                                   config_.model_directory + ")"))};
      }
      case v1::ModelSource::kUrdf: {
        if (source.urdf().size() > config_.max_model_text_bytes) {
          return invalid("model.urdf: " + std::to_string(source.urdf().size()) +
                         " bytes, this server accepts at most " +
                         std::to_string(config_.max_model_text_bytes));
        }
        *model = std::make_shared<const Model>(
            loadUrdfString(source.urdf(), options, source_name, modelLimits(config_)));
        for (const std::string& warning : (*model)->load_warnings) {
          spdlog::warn("model '{}': {}", (*model)->name, warning);
        }
        *name = (*model)->name;
        return grpc::Status::OK;
      }
      case v1::ModelSource::kYaml: {
        if (source.yaml().size() > config_.max_model_text_bytes) {
          return invalid("model.yaml: " + std::to_string(source.yaml().size()) +
                         " bytes, this server accepts at most " +
                         std::to_string(config_.max_model_text_bytes));
        }
        // a `urdf` or `flexible.file` it names must lie in the model directory (modelLimits)
        *model = std::make_shared<const Model>(loadYamlString(
            source.yaml(), model_directory_, source_name, modelLimits(config_)));
        *name = (*model)->name;
        return grpc::Status::OK;
      }
      case v1::ModelSource::kSdf:
      case v1::ModelSource::kMjcf: {
        const bool sdf = source.source_case() == v1::ModelSource::kSdf;
        const std::string& text = sdf ? source.sdf() : source.mjcf();
        if (text.size() > config_.max_model_text_bytes) {
          return invalid(std::string(sdf ? "model.sdf: " : "model.mjcf: ") +
                         std::to_string(text.size()) + " bytes, this server accepts at most " +
                         std::to_string(config_.max_model_text_bytes));
        }
        *model = std::make_shared<const Model>(
            sdf ? loadSdfString(text, options, source_name, modelLimits(config_))
                : loadMjcfString(text, source_name, modelLimits(config_)));
        for (const std::string& warning : (*model)->load_warnings) {
          spdlog::warn("model '{}': {}", (*model)->name, warning);
        }
        *name = (*model)->name;
        return grpc::Status::OK;
      }
      case v1::ModelSource::SOURCE_NOT_SET:
        return invalid("model: no source (set bundled_name, urdf, yaml, sdf or mjcf)");
    }
  } catch (const std::exception& e) {
    return invalid(clipped(e.what()));
  }
  return invalid("model: unknown source");
}

std::string SessionRegistry::directoryModelPath(const std::string& name) const {
  return config_.model_directory.empty() ? std::string()
                                         : modelFileIn(config_.model_directory, name);
}

std::unique_ptr<UdpEndpoint> SessionRegistry::openUdp(ServerSession& session,
                                                      std::uint16_t requested_port) {
  if (requested_port != 0 || (config_.udp_port_first == 0 && config_.udp_port_last == 0)) {
    return std::make_unique<UdpEndpoint>(session, config_.bind_address, requested_port);
  }
  // Try each port of the range once, starting after the last one handed out.
  const int first = config_.udp_port_first;
  const int count = config_.udp_port_last - first + 1;
  for (int attempt = 0; attempt < count; ++attempt) {
    const int port = first + (next_udp_port_ - first + attempt) % count;
    try {
      auto endpoint = std::make_unique<UdpEndpoint>(session, config_.bind_address,
                                                    static_cast<std::uint16_t>(port));
      next_udp_port_ = static_cast<std::uint16_t>(first + (port - first + 1) % count);
      return endpoint;
    } catch (const std::system_error&) {
      // In use (by another session or process): the next one.
    }
  }
  return nullptr;
}

grpc::Status SessionRegistry::checkSessionLimit(const std::string& client) const {
  if (static_cast<int>(sessions_.size()) >= config_.max_sessions) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED,
            "the server's session limit (" + std::to_string(config_.max_sessions) +
                ") is reached: close a session first"};
  }
  if (client == kOperator) return grpc::Status::OK;
  const auto held = std::count_if(sessions_.begin(), sessions_.end(), [&](const auto& entry) {
    return entry.second.session->client() == client;
  });
  if (held >= config_.max_sessions_per_client) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED,
            "this client (" + client + ") holds " + std::to_string(held) +
                " sessions, the limit per client (limits.max_sessions_per_client): close one "
                "first"};
  }
  return grpc::Status::OK;
}

grpc::Status SessionRegistry::create(const v1::CreateSessionRequest& request,
                                     v1::CreateSessionResponse* response,
                                     std::uint16_t udp_port, std::string owner,
                                     std::string_view udp_key) {
  {
    // a full server does not pay for a load (checked again below: creations run concurrently)
    std::lock_guard lock(mutex_);
    if (grpc::Status status = checkSessionLimit(owner); !status.ok()) return status;
  }
  std::shared_ptr<const Model> model;
  std::string model_name;
  if (!request.has_model()) return invalid("model: no source (set bundled_name, urdf or yaml)");
  const v1::ModelSource& source = request.model();
  const bool preloaded = source.source_case() == v1::ModelSource::kBundledName &&
                         (bundled_models_.count(source.bundled_name()) > 0 ||
                          unloadable_models_.count(source.bundled_name()) > 0 ||
                          directoryModelPath(source.bundled_name()).empty());
  if (preloaded) {
    // loaded (or refused) at start-up, or unknown: nothing to wait for
    if (grpc::Status status = loadModel(request.model(), &model, &model_name); !status.ok()) {
      return status;
    }
  } else {
    // try_lock in a short poll rather than a timed lock: ThreadSanitizer (GCC 12) does not
    // intercept pthread_mutex_clocklock, under which std::timed_mutex waits, and then reports
    // every unlock as one of an unlocked mutex
    std::unique_lock loading(load_mutex_, std::defer_lock);
    const auto give_up = std::chrono::steady_clock::now() + kTextLoadWait;
    while (!loading.try_lock()) {
      if (std::chrono::steady_clock::now() >= give_up) {
        return {grpc::StatusCode::UNAVAILABLE, "another model is being loaded; retry"};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (grpc::Status status = loadModel(request.model(), &model, &model_name); !status.ok()) {
      return status;
    }
  }
  if (model->nq > rt::kMaxCoordinates || model->nv > rt::kMaxCoordinates) {
    return invalid("model '" + model_name + "': nq = " + std::to_string(model->nq) +
                   ", nv = " + std::to_string(model->nv) + "; sessions take at most " +
                   std::to_string(rt::kMaxCoordinates) + " coordinates in q and in v");
  }

  // outside the lock: an eigendecomposition that Step and the transports must not wait for
  const StepLimit step_limit = sessionStepLimit(request.config(), *model);
  std::lock_guard lock(mutex_);
  if (grpc::Status status = checkSessionLimit(owner); !status.ok()) return status;
  const std::uint64_t id = next_id_;
  rt::SessionConfig rt_config;
  v1::SessionConfig effective;
  if (std::string error = resolveSessionConfig(request.config(), config_, model, id, &rt_config,
                                               &effective, &step_limit);
      !error.empty()) {
    return invalid(error);
  }
  // names are unique among the open sessions: the CLI and the start-up sessions address by name
  for (const auto& [other_id, other] : sessions_) {
    if (other.session->name() == effective.name()) {
      return {grpc::StatusCode::ALREADY_EXISTS,
              "config.name: session " + std::to_string(other_id) + " is named '" +
                  effective.name() + "'; names are unique among the open sessions"};
    }
  }
  const v1::ModelInfo info = describeModel(*model, model_name);
  Entry entry;
  try {
    entry.session = std::make_shared<ServerSession>(id, std::move(rt_config), info, effective,
                                                    randomToken(), events_, shared_);
  } catch (const rt::AdmissionError& e) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, e.what()};
  } catch (const std::exception& e) {
    return invalid(e.what());
  }
  // before any transport sees it
  entry.session->setMaxStepCycles(config_.max_step_cycles);
  entry.session->setCpuBudget(config_.max_request_cpu_s, config_.max_queued_cpu_s);
  if (owner != kOperator) {
    // the client's session: only the holder of this secret (or the operator) may drive it
    entry.session->setClient(owner);
    entry.session->setOwnerSecret(randomSecret());
    response->set_owner_secret(entry.session->ownerSecret());
  }
  if (config_.udp_enabled && config_.udp_authentication == v1::UDP_AUTHENTICATION_MAC) {
    udp::Key key;
    entry.session->setUdpKey(udp::Key::fromBytes(udp_key, &key) ? key : udp::Key::random());
  }
  entry.session->setOwner(owner == kOperator ? "operator" : std::move(owner));
  if (config_.udp_enabled) {
    try {
      entry.udp = openUdp(*entry.session, udp_port);
    } catch (const std::system_error& e) {
      // the words every listener of the server uses for a port taken (server.cc)
      if (e.code() == std::errc::address_in_use) {
        return {grpc::StatusCode::RESOURCE_EXHAUSTED,
                "address " + config_.bind_address + ":" + std::to_string(udp_port) +
                    " already in use (UDP)"};
      }
      return {grpc::StatusCode::RESOURCE_EXHAUSTED,
              "UDP port " + std::to_string(udp_port) + " cannot be bound: " + e.what()};
    }
    if (!entry.udp) {
      return {grpc::StatusCode::RESOURCE_EXHAUSTED,
              "no free UDP port in " + std::to_string(config_.udp_port_first) + " … " +
                  std::to_string(config_.udp_port_last)};
    }
    entry.session->setUdpPort(entry.udp->port());
    entry.udp->start();
  }
  entry.model_name = model_name;
  ++next_id_;
  ServerSession& session = *entry.session;
  // the session's credentials, in this response only
  if (const udp::Key* key = session.udpKey()) {
    response->set_udp_key(std::string(key->view()));
  } else {
    const ServerSession::Token& token = session.udpToken();
    response->set_udp_token(std::string(token.begin(), token.end()));
  }
  session.fillInfo(response->mutable_session());
  spdlog::info("session {} '{}' created: model {} (nq {}, nv {}), {} at {} Hz, UDP port {}", id,
               session.name(), model_name, model->nq, model->nv,
               rt::sessionModeName(session.mode()), effective.control_rate_hz(),
               session.udpPort());
  sessions_.emplace(id, std::move(entry));
  return grpc::Status::OK;
}

const rt::WorkerSet* SessionRegistry::workers() const {
  return shared_ ? &shared_->workers : nullptr;
}

std::vector<v1::WorkerStats> SessionRegistry::workerStats() const {
  std::vector<v1::WorkerStats> out;
  if (!shared_) return out;
  for (const rt::WorkerStats& worker : shared_->workers.stats()) toProto(worker, &out.emplace_back());
  return out;
}

std::shared_ptr<ServerSession> SessionRegistry::find(std::uint64_t id) const {
  std::lock_guard lock(mutex_);
  const auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  it->second.session->touch();
  return it->second.session;
}

std::vector<std::shared_ptr<ServerSession>> SessionRegistry::list() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<ServerSession>> all;
  all.reserve(sessions_.size());
  for (const auto& [id, entry] : sessions_) all.push_back(entry.session);
  return all;
}

bool SessionRegistry::close(std::uint64_t id, v1::SessionStats* final_stats) {
  Entry entry;
  {
    std::lock_guard lock(mutex_);
    const auto it = sessions_.find(id);
    if (it == sessions_.end()) return false;
    entry = std::move(it->second);
    sessions_.erase(it);
  }
  if (entry.udp) entry.udp->stop();
  entry.session->close();
  if (final_stats != nullptr) entry.session->fillStats(final_stats);
  logFinalStats(*entry.session);
  return true;
}

void SessionRegistry::closeAll() {
  std::vector<std::uint64_t> ids;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, entry] : sessions_) ids.push_back(id);
  }
  for (const std::uint64_t id : ids) close(id, nullptr);
}

void SessionRegistry::logFinalStats(ServerSession& session) {
  v1::SessionStats s;
  session.fillStats(&s);
  const v1::TimingStats& t = s.timing();
  spdlog::info(
      "session {} '{}' closed: {} cycles, {:.3f} s simulated, real-time factor {:.3f}; wake-up "
      "latency p50 {:.1f} µs p99 {:.1f} µs max {:.1f} µs; {} deadline misses, {} skipped; "
      "commands {} received, {} applied, {} dropped; watchdog trips {}; UDP {} received, {} "
      "accepted; gRPC {} received, {} accepted",
      session.id(), session.name(), s.cycles(), s.time(), s.real_time_factor(),
      micros(t.wakeup_latency().p50_ns()), micros(t.wakeup_latency().p99_ns()),
      micros(t.wakeup_latency().max_ns()), t.deadline_misses(), t.skipped_cycles(),
      s.commands().received(), s.commands().applied(), s.commands().dropped(),
      s.watchdog().trips(), s.udp().received(), s.udp().accepted(), s.grpc().received(),
      s.grpc().accepted());
}

std::vector<SessionMetricsSample> SessionRegistry::sample() const {
  std::vector<std::pair<std::shared_ptr<ServerSession>, std::string>> sessions;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, entry] : sessions_) sessions.emplace_back(entry.session, entry.model_name);
  }
  std::vector<SessionMetricsSample> samples(sessions.size());
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    ServerSession& session = *sessions[i].first;
    SessionMetricsSample& out = samples[i];
    out.id = session.id();
    out.name = session.name();
    out.model = sessions[i].second;
    session.fillStats(&out.stats);
    out.dof_labels.assign(session.modelInfo().v_labels().begin(),
                          session.modelInfo().v_labels().end());
    // In place: this runs on the metrics server's thread, whose stack is small.
    session.session().monitor().wakeupLatency().snapshot(out.wakeup_latency);
    session.session().monitor().computeTime().snapshot(out.compute_time);
    session.session().stepTime().snapshot(out.engine_step);
  }
  return samples;
}

}  // namespace hilsim::server
