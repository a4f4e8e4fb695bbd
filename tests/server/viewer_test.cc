// The browser viewer's server side (server/viewer.h, docs/VIEWER.md): its URL parser, the page
// and the JSON API over a real hilsim-server on loopback, and the WebSocket of frames read with
// civetweb's own client.
#include "server/viewer.h"

#include <gtest/gtest.h>

#include <civetweb.h>
#include <google/protobuf/util/json_util.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <Eigen/Geometry>

#include "engine/algorithms/forward_kinematics.h"
#include "engine/io/model_loader.h"
#include "hilsim/v1/viewer.pb.h"
#include "server/server.h"
#include "server/session_registry.h"
#include "server/viewer_route.h"
#include "tests/support/loopback_server.h"
#include "tests/support/tolerances.h"

namespace hilsim::server {
namespace {

using namespace std::chrono_literals;

// --- the URL parser ---

TEST(ViewerRouteTest, NamesWhatEachPathAsksFor) {
  using Kind = ViewerRoute::Kind;
  struct Case {
    const char* method;
    const char* path;
    Kind kind;
    std::uint64_t id;
  };
  const Case cases[] = {
      {"GET", "/", Kind::kAsset, 0},
      {"GET", "/viewer.js", Kind::kAsset, 0},
      {"GET", "/api/sessions", Kind::kSessions, 0},
      {"GET", "/api/sessions/12/scene", Kind::kScene, 12},
      {"POST", "/api/sessions/3/pause", Kind::kAction, 3},
      {"GET", "/ws/sessions/18446744073709551615", Kind::kFrames, 18446744073709551615ULL},
      {"POST", "/api/sessions", Kind::kMethodNotAllowed, 0},
      {"GET", "/api/sessions/3/start", Kind::kMethodNotAllowed, 0},
      {"POST", "/viewer.js", Kind::kMethodNotAllowed, 0},
      {"GET", "/api/sessions/0/scene", Kind::kNotFound, 0},                     // ids start at 1
      {"GET", "/api/sessions/18446744073709551616/scene", Kind::kNotFound, 0},  // 2⁶⁴
      {"GET", "/api/sessions/-1/scene", Kind::kNotFound, 0},
      {"GET", "/api/sessions/1x/scene", Kind::kNotFound, 0},
      {"GET", "/api/sessions/1/scene/", Kind::kNotFound, 0},
      {"POST", "/api/sessions/1/explode", Kind::kNotFound, 0},
      {"GET", "/ws/sessions", Kind::kNotFound, 0},
      {"GET", "/ws/sessions/1/scene", Kind::kNotFound, 0},
      {"GET", "/api/sessions/2/meshes/0", Kind::kMesh, 2},
      {"GET", "/api/sessions/2/meshes/", Kind::kNotFound, 0},
      {"GET", "/api/sessions/2/meshes/x", Kind::kNotFound, 0},
      {"GET", "/api/sessions/2/meshes/1/2", Kind::kNotFound, 0},
      {"POST", "/api/sessions/2/meshes/1", Kind::kMethodNotAllowed, 0},
      {"GET", "/.hidden", Kind::kNotFound, 0},
      {"GET", "/../etc/passwd", Kind::kNotFound, 0},
      {"GET", "/dir/file.js", Kind::kNotFound, 0},
      {"GET", "", Kind::kNotFound, 0},
      {"GET", "viewer.js", Kind::kNotFound, 0},
  };
  for (const Case& c : cases) {
    const ViewerRoute route = parseViewerRoute(c.method, c.path);
    EXPECT_EQ(route.kind, c.kind) << c.method << " " << c.path;
    EXPECT_EQ(route.session_id, c.id) << c.method << " " << c.path;
  }
  EXPECT_EQ(parseViewerRoute("GET", "/").asset, "index.html");
  EXPECT_EQ(parseViewerRoute("GET", "/viewer.css").asset, "viewer.css");
  EXPECT_EQ(parseViewerRoute("POST", "/api/sessions/4/reset").action, ViewerRoute::Action::kReset);
  EXPECT_EQ(parseViewerRoute("GET", "/api/sessions/4/meshes/17").mesh, 17u);
}

// --- a client: HTTP requests and a WebSocket, with civetweb's client API ---

struct Response {
  int status = 0;
  std::string content_type;
  std::string body;
};

Response request(std::uint16_t port, const std::string& method, const std::string& path,
                 const std::string& headers = "") {
  char error[256] = "";
  mg_connection* conn = mg_connect_client("127.0.0.1", port, 0, error, sizeof error);
  if (conn == nullptr) return {-1, "", error};
  mg_printf(conn, "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nContent-Length: 0\r\n%s\r\n",
            method.c_str(), path.c_str(), static_cast<unsigned>(port), headers.c_str());
  Response response;
  if (mg_get_response(conn, error, sizeof error, 5000) >= 0) {
    const mg_response_info* info = mg_get_response_info(conn);
    response.status = info->status_code;
    for (int i = 0; i < info->num_headers; ++i) {
      if (strcasecmp(info->http_headers[i].name, "Content-Type") == 0) {
        response.content_type = info->http_headers[i].value;
      }
    }
    char buffer[16384];
    int n;
    while ((n = mg_read(conn, buffer, sizeof buffer)) > 0) response.body.append(buffer, n);
  } else {
    response.status = -1;
    response.body = error;
  }
  mg_close_connection(conn);
  return response;
}

template <typename Message>
Message fromJson(const std::string& json) {
  Message message;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &message);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << json.substr(0, 400);
  return message;
}

/// A WebSocket to /ws/sessions/<id>: every text message it receives, in order.
class FrameReader {
 public:
  FrameReader(std::uint16_t port, const std::string& path) {
    char error[256] = "";
    conn_ = mg_connect_websocket_client("127.0.0.1", port, 0, error, sizeof error, path.c_str(),
                                        nullptr, &FrameReader::onData, &FrameReader::onClose,
                                        this);
    error_ = error;
  }
  ~FrameReader() {
    if (conn_ != nullptr) mg_close_connection(conn_);
  }
  bool connected() const { return conn_ != nullptr; }
  const std::string& error() const { return error_; }

  /// The next message, or empty after `timeout`.
  std::string next(std::chrono::milliseconds timeout = 3000ms) {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_for(lock, timeout, [&] { return !messages_.empty() || closed_; })) return {};
    if (messages_.empty()) return {};
    std::string message = std::move(messages_.front());
    messages_.pop_front();
    return message;
  }
  bool closedByServer() {
    std::lock_guard lock(mutex_);
    return closed_;
  }

 private:
  static int onData(mg_connection*, int bits, char* data, std::size_t length, void* self) {
    auto* reader = static_cast<FrameReader*>(self);
    if ((bits & 0x0f) == MG_WEBSOCKET_OPCODE_TEXT) {
      std::lock_guard lock(reader->mutex_);
      reader->messages_.emplace_back(data, length);
      reader->ready_.notify_all();
    }
    return 1;
  }
  static void onClose(const mg_connection*, void* self) {
    auto* reader = static_cast<FrameReader*>(self);
    std::lock_guard lock(reader->mutex_);
    reader->closed_ = true;
    reader->ready_.notify_all();
  }

  mg_connection* conn_ = nullptr;
  std::string error_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::string> messages_;
  bool closed_ = false;
};

// --- a server with the viewer on an ephemeral port ---

constexpr const char* kOperatorSecret = "viewer-test-operator";

class ViewerTest : public ::testing::Test {
 protected:
  void startServer(ServerConfig config) {
    server_ = std::make_unique<Server>(std::move(config));
    server_->start();
    port_ = server_->viewerPort();
    ASSERT_NE(port_, 0);
  }
  void SetUp() override {
    ServerConfig config = test::loopbackServerConfig();
    config.viewer_enabled = true;
    config.viewer_port = 0;
    config.session_defaults.mutable_thread()->set_lock_memory(false);
    config.operator_secret = kOperatorSecret;
    startServer(config);
  }
  void TearDown() override {
    if (server_) server_->shutdown();
  }

  std::uint64_t createSession(const std::string& model, const std::string& name, bool start) {
    v1::CreateSessionRequest request;
    request.mutable_model()->set_bundled_name(model);
    request.mutable_config()->set_name(name);
    v1::CreateSessionResponse response;
    const grpc::Status status = server_->sessions().create(request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    const std::uint64_t id = response.session().session_id();
    std::string why;
    if (start) {
      EXPECT_TRUE(server_->sessions().find(id)->start(&why)) << why;
    }
    return id;
  }

  std::unique_ptr<Server> server_;
  std::uint16_t port_ = 0;
};

TEST_F(ViewerTest, ServesThePageAndItsBundleFromTheBinary) {
  const Response page = request(port_, "GET", "/");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_NE(page.content_type.find("text/html"), std::string::npos);
  EXPECT_NE(page.body.find("<script src=\"viewer.js\">"), std::string::npos);
  const Response script = request(port_, "GET", "/viewer.js");
  ASSERT_EQ(script.status, 200);
  EXPECT_NE(script.content_type.find("javascript"), std::string::npos);
  // three.js and uPlot are inside: the page needs nothing from the network
  EXPECT_GT(script.body.size(), 300'000u);
  EXPECT_NE(script.body.find("WebGLRenderer"), std::string::npos);
  EXPECT_EQ(request(port_, "GET", "/viewer.css").status, 200);
  EXPECT_EQ(request(port_, "GET", "/LICENSES.txt").status, 200);
}

TEST_F(ViewerTest, ListsTheOpenSessions) {
  const std::uint64_t id = createSession("pendulum", "swing", true);
  const Response response = request(port_, "GET", "/api/sessions");
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(response.content_type, "application/json");
  const auto sessions = fromJson<v1::ViewerSessions>(response.body);
  ASSERT_EQ(sessions.list().sessions_size(), 1);
  const v1::SessionInfo& session = sessions.list().sessions(0);
  EXPECT_EQ(session.session_id(), id);
  EXPECT_EQ(session.name(), "swing");
  EXPECT_EQ(session.state(), v1::SESSION_STATE_RUNNING);
  EXPECT_EQ(sessions.viewer().requests(), 1u);
  EXPECT_EQ(sessions.viewer().rate_hz(), 30.0);
}

// The scene's shapes come from the model: a segment to every child joint, one joint marker per
// body, and an inertia box whose uniform-density inertia is the body's own.
TEST_F(ViewerTest, SceneDrawsEveryBodyWithTheInertiaOfItsBox) {
  const std::uint64_t id = createSession("iiwa14", "arm", false);
  const Response response =
      request(port_, "GET", "/api/sessions/" + std::to_string(id) + "/scene");
  ASSERT_EQ(response.status, 200) << response.body;
  const auto scene = fromJson<v1::ViewerScene>(response.body);
  const Model& model = server_->sessions().find(id)->model();
  ASSERT_EQ(scene.bodies_size(), model.nbodies);
  EXPECT_EQ(scene.model().nv(), 7u);
  EXPECT_EQ(scene.control_period_ns(), 1'000'000);
  EXPECT_GT(scene.extent(), 1.0);  // the iiwa14 stands 1.3 m tall
  EXPECT_LT(scene.extent(), 1.5);
  int boxes_checked = 0;
  for (int i = 1; i < model.nbodies; ++i) {
    const v1::ViewerBody& body = scene.bodies(i);
    EXPECT_EQ(body.name(), model.body_names[i]);
    EXPECT_EQ(body.parent(), model.parent[i]);
    int joints = 0, links = 0;
    for (const v1::ViewerShape& shape : body.shapes()) {
      ASSERT_EQ(shape.position_size(), 3);
      ASSERT_EQ(shape.rotation_size(), 4);
      joints += shape.role() == v1::ViewerShape::ROLE_JOINT;
      links += shape.role() == v1::ViewerShape::ROLE_LINK;
      if (shape.role() != v1::ViewerShape::ROLE_INERTIA) continue;
      ASSERT_EQ(shape.kind(), v1::ViewerShape::KIND_BOX);
      const Eigen::Quaterniond q(shape.rotation(0), shape.rotation(1), shape.rotation(2),
                                 shape.rotation(3));
      const Eigen::Vector3d side(shape.size(0), shape.size(1), shape.size(2));
      const double m = model.inertias[i].mass;
      // a box's central inertia: m/12 (b² + c²), … about its own axes
      const Eigen::Vector3d moments =
          m / 12.0 * Eigen::Vector3d(side.y() * side.y() + side.z() * side.z(),
                                     side.x() * side.x() + side.z() * side.z(),
                                     side.x() * side.x() + side.y() * side.y());
      const Eigen::Matrix3d box = q.toRotationMatrix() * moments.asDiagonal() *
                                  q.toRotationMatrix().transpose();
      // the iiwa14's inertias are boxes' (no side clamped): the same tensor to rounding of the
      // eigen-decomposition and the quaternion (1e-12 relative of the largest moment)
      EXPECT_LT(test::relativeDifference(box, model.inertias[i].inertia_com),
                1e-12 * std::max(1.0, model.inertias[i].inertia_com.norm()))
          << body.name();
      EXPECT_NEAR((Eigen::Vector3d(shape.position(0), shape.position(1), shape.position(2)) -
                   model.inertias[i].com).norm(), 0.0, test::kAlgebraTol);
      ++boxes_checked;
    }
    EXPECT_EQ(joints, 1) << body.name();
    int children = 0;
    for (int j = i + 1; j < model.nbodies; ++j) children += model.parent[j] == i;
    EXPECT_GE(links, children) << body.name();
  }
  EXPECT_EQ(boxes_checked, model.nbodies - 1);
}

// A URDF's own visual geometry is drawn instead of the inertia box and segments; a body with
// meshes only (not loaded) keeps them.
TEST_F(ViewerTest, SceneDrawsAUrdfsVisualGeometry) {
  const std::string inertial =
      "<inertial><mass value='1'/><inertia ixx='0.01' iyy='0.01' izz='0.01' ixy='0' ixz='0' "
      "iyz='0'/></inertial>";
  v1::CreateSessionRequest create;
  create.mutable_model()->set_urdf(
      "<robot name='r'><link name='base'/>"
      "<joint name='j1' type='continuous'><parent link='base'/><child link='arm'/>"
      "<axis xyz='0 0 1'/></joint>"
      "<link name='arm'>" + inertial +
      "<visual><origin xyz='0 0 0.25'/><geometry><cylinder radius='0.05' length='0.5'/>"
      "</geometry><material name='red'><color rgba='1 0 0 1'/></material></visual></link>"
      "<joint name='j2' type='continuous'><parent link='arm'/><child link='hand'/>"
      "<origin xyz='0 0 0.5'/><axis xyz='0 1 0'/></joint>"
      "<link name='hand'>" + inertial +
      "<visual><geometry><mesh filename='hand.stl'/></geometry></visual></link></robot>");
  create.mutable_config()->set_name("drawn");
  v1::CreateSessionResponse response;
  ASSERT_TRUE(server_->sessions().create(create, &response).ok());
  const std::uint64_t id = response.session().session_id();
  const auto scene = fromJson<v1::ViewerScene>(
      request(port_, "GET", "/api/sessions/" + std::to_string(id) + "/scene").body);
  ASSERT_EQ(scene.bodies_size(), 3);
  auto roles = [&](int body, v1::ViewerShape::Role role) {
    int n = 0;
    for (const v1::ViewerShape& shape : scene.bodies(body).shapes()) n += shape.role() == role;
    return n;
  };
  // the arm: its cylinder in red, its joint, nothing else
  EXPECT_EQ(roles(1, v1::ViewerShape::ROLE_VISUAL), 1);
  EXPECT_EQ(roles(1, v1::ViewerShape::ROLE_INERTIA), 0);
  EXPECT_EQ(roles(1, v1::ViewerShape::ROLE_LINK), 0);
  EXPECT_EQ(roles(1, v1::ViewerShape::ROLE_JOINT), 1);
  for (const v1::ViewerShape& shape : scene.bodies(1).shapes()) {
    if (shape.role() != v1::ViewerShape::ROLE_VISUAL) continue;
    EXPECT_EQ(shape.kind(), v1::ViewerShape::KIND_CYLINDER);
    EXPECT_EQ(shape.size(0), 0.05);
    EXPECT_EQ(shape.size(1), 0.5);
    EXPECT_EQ(shape.position(2), 0.25);
    ASSERT_EQ(shape.rgba_size(), 4);
    EXPECT_EQ(shape.rgba(0), 1.0);
  }
  // the hand: a mesh only, so the shapes from its inertia
  EXPECT_EQ(roles(2, v1::ViewerShape::ROLE_VISUAL), 0);
  EXPECT_EQ(roles(2, v1::ViewerShape::ROLE_INERTIA), 1);
}

// Meshes found beside a model file of models.directory are offered by index and served as the
// file's bytes; nothing else is.
TEST_F(ViewerTest, ServesTheMeshesOfAModelFileByIndexOnly) {
  namespace fs = std::filesystem;
  const fs::path directory = fs::temp_directory_path() / ("hilsim-viewer-" + std::to_string(port_));
  fs::remove_all(directory);
  fs::create_directories(directory / "meshes");
  const fs::path data = HILSIM_TEST_DATA_DIR "/io";
  fs::copy_file(data / "mesh_robot.urdf", directory / "mesh_robot.urdf");
  for (const char* mesh : {"tetra.stl", "wedge.obj"}) {
    fs::copy_file(data / "meshes" / mesh, directory / "meshes" / mesh);
  }
  server_->shutdown();
  ServerConfig config = test::loopbackServerConfig();
  config.viewer_enabled = true;
  config.viewer_port = 0;
  config.model_directory = directory.string();
  config.session_defaults.mutable_thread()->set_lock_memory(false);
  startServer(config);
  const std::uint64_t id = createSession("mesh_robot", "meshes", false);
  const std::string base = "/api/sessions/" + std::to_string(id);
  const auto scene = fromJson<v1::ViewerScene>(request(port_, "GET", base + "/scene").body);
  ASSERT_EQ(scene.bodies_size(), 2);
  std::vector<v1::ViewerShape> meshes;
  for (const v1::ViewerBody& body : scene.bodies()) {
    for (const v1::ViewerShape& shape : body.shapes()) {
      if (shape.kind() == v1::ViewerShape::KIND_MESH) meshes.push_back(shape);
    }
  }
  // the ground's tetrahedron and the arm's wedge; not the missing file, nor the two outside the
  // directory, nor the detour (it ends inside tests/data/io, which this copy is not)
  ASSERT_EQ(meshes.size(), 2u);
  EXPECT_EQ(meshes[0].mesh_url(), base + "/meshes/0");
  EXPECT_EQ(meshes[0].mesh_format(), "stl");
  ASSERT_EQ(meshes[0].scale_size(), 3);
  EXPECT_EQ(meshes[0].scale(0), 2.0);
  ASSERT_EQ(meshes[0].rgba_size(), 4);
  EXPECT_EQ(meshes[1].mesh_url(), base + "/meshes/1");
  EXPECT_EQ(meshes[1].mesh_format(), "obj");
  // the arm is drawn by its meshes, not by its inertia box
  for (const v1::ViewerShape& shape : scene.bodies(1).shapes()) {
    EXPECT_NE(shape.role(), v1::ViewerShape::ROLE_INERTIA);
  }
  std::ifstream tetra(directory / "meshes" / "tetra.stl", std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(tetra), {}};
  const Response served = request(port_, "GET", base + "/meshes/0");
  EXPECT_EQ(served.status, 200);
  EXPECT_EQ(served.body, bytes);
  for (const char* refused :
       {"/meshes/2", "/meshes/3", "/meshes/4", "/meshes/5", "/meshes/6", "/meshes/99"}) {
    EXPECT_EQ(request(port_, "GET", base + refused).status, 404) << refused;
  }
  EXPECT_EQ(request(port_, "GET", base + "/meshes/..%2F..%2Fetc%2Fpasswd").status, 404);
  server_->shutdown();
  fs::remove_all(directory);
}

// Frames follow the running session: cycles grow, and every body's pose is the one its own q
// gives (the page draws what the state says).
TEST_F(ViewerTest, FramesFollowTheRunningSession) {
  const std::uint64_t id = createSession("iiwa14", "arm", true);
  FrameReader reader(port_, "/ws/sessions/" + std::to_string(id));
  ASSERT_TRUE(reader.connected()) << reader.error();
  const Model& model = server_->sessions().find(id)->model();
  Data data(model);
  std::uint64_t last_cycle = 0;
  Eigen::VectorXd first_q;
  double first_time = 0.0;
  int frames = 0;
  for (; frames < 8; ++frames) {
    const std::string json = reader.next();
    ASSERT_FALSE(json.empty()) << "no frame " << frames;
    const auto frame = fromJson<v1::ViewerFrame>(json);
    EXPECT_EQ(frame.session_id(), id);
    ASSERT_EQ(frame.q_size(), model.nq);
    ASSERT_EQ(frame.poses_size(), 7 * model.nbodies);
    if (frames > 0) {
      EXPECT_GT(frame.cycle(), last_cycle);
    }
    last_cycle = frame.cycle();
    EXPECT_NEAR(frame.time(), 1e-3 * static_cast<double>(frame.cycle()), 1e-9);
    const Eigen::VectorXd q = Eigen::Map<const Eigen::VectorXd>(frame.q().data(), model.nq);
    if (frames == 0) {
      first_q = q;
      first_time = frame.time();
    }
    forwardKinematics(model, data, q);
    for (int i = 0; i < model.nbodies; ++i) {
      const double* p = frame.poses().data() + 7 * i;
      const Eigen::Quaterniond rotation(p[3], p[4], p[5], p[6]);
      EXPECT_LT((Eigen::Vector3d(p[0], p[1], p[2]) - data.X_WB[i].translation).norm(),
                test::kAlgebraTol);
      EXPECT_LT((rotation.toRotationMatrix() - data.X_WB[i].rotation).norm(), test::kAlgebraTol);
    }
    if (frames > 0) {
      EXPECT_GT(frame.timing().cycles(), 0u);  // the first may be the state before any cycle
    }
  }
  // with no controller the arm falls (from upright, slowly at first) onto its stops: the frames
  // show it moving over half a second of simulated time, however fast the host runs the session
  // (a loaded host under ThreadSanitizer ran it at half the wall clock's rate)
  auto last = fromJson<v1::ViewerFrame>(reader.next());
  for (int more = 0; more < 300 && last.time() < first_time + 0.5; ++more) {
    const std::string json = reader.next();
    ASSERT_FALSE(json.empty()) << "no frame after t = " << last.time() << " s";
    last = fromJson<v1::ViewerFrame>(json);
  }
  ASSERT_EQ(last.q_size(), model.nq);
  EXPECT_GE(last.time(), first_time + 0.5);
  EXPECT_GT((Eigen::Map<const Eigen::VectorXd>(last.q().data(), model.nq) - first_q).norm(), 1e-3);
}

// A loop closure is drawn by its two frames' origins, which the constraint stage keeps together.
TEST_F(ViewerTest, ClosurePointsOfAnAssembledLoopCoincide) {
  const std::uint64_t id = createSession("four_bar", "loop", true);
  FrameReader reader(port_, "/ws/sessions/" + std::to_string(id));
  ASSERT_TRUE(reader.connected()) << reader.error();
  const Response scene_response =
      request(port_, "GET", "/api/sessions/" + std::to_string(id) + "/scene");
  const auto scene = fromJson<v1::ViewerScene>(scene_response.body);
  ASSERT_EQ(scene.closures_size(), 1);
  EXPECT_EQ(scene.closures(0).type(), "revolute");
  for (int k = 0; k < 5; ++k) {
    const auto frame = fromJson<v1::ViewerFrame>(reader.next());
    ASSERT_EQ(frame.closure_points_size(), 6);
    const Eigen::Vector3d a(frame.closure_points(0), frame.closure_points(1),
                            frame.closure_points(2));
    const Eigen::Vector3d b(frame.closure_points(3), frame.closure_points(4),
                            frame.closure_points(5));
    // the projection after every step keeps C(q) at Gauss–Newton's quadratic residual: far
    // below a micrometre on a 0.35 m linkage (docs/LOOPS.md)
    EXPECT_LT((a - b).norm(), 1e-6) << "cycle " << frame.cycle();
  }
}

TEST_F(ViewerTest, ActionsDriveTheSessionAndBadRequestsAreRefusedAndCounted) {
  const std::uint64_t id = createSession("pendulum", "swing", true);
  const std::string base = "/api/sessions/" + std::to_string(id);
  const std::string owner = std::string("X-Hilsim-Owner: ") + kOperatorSecret + "\r\n";
  const std::string marker = "X-Hilsim-Viewer: 1\r\n" + owner;
  // a form of another site cannot set the header
  EXPECT_EQ(request(port_, "POST", base + "/pause", owner).status, 403);
  // a page without the session's owner secret (or the operator's) does not drive it
  Response r = request(port_, "POST", base + "/pause", "X-Hilsim-Viewer: 1\r\n");
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("owner secret"), std::string::npos) << r.body;
  EXPECT_EQ(request(port_, "POST", base + "/pause",
                    "X-Hilsim-Viewer: 1\r\nX-Hilsim-Owner: guessed\r\n")
                .status,
            403);
  r = request(port_, "POST", base + "/pause", marker);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(fromJson<v1::SessionInfo>(r.body).state(), v1::SESSION_STATE_PAUSED);
  r = request(port_, "POST", base + "/pause", marker);
  EXPECT_EQ(r.status, 409);  // not running
  EXPECT_NE(r.body.find("\"error\""), std::string::npos);
  r = request(port_, "POST", base + "/start", marker);
  EXPECT_EQ(fromJson<v1::SessionInfo>(r.body).state(), v1::SESSION_STATE_RUNNING);
  r = request(port_, "POST", base + "/reset", marker);
  EXPECT_EQ(fromJson<v1::SessionInfo>(r.body).state(), v1::SESSION_STATE_CREATED);
  // another origin is refused even with the header
  EXPECT_EQ(request(port_, "POST", base + "/start", marker + "Origin: http://evil.example\r\n")
                .status,
            403);

  EXPECT_EQ(request(port_, "GET", "/api/sessions/999/scene").status, 404);
  EXPECT_EQ(request(port_, "GET", "/no/such/page").status, 404);
  EXPECT_EQ(request(port_, "GET", base + "/start").status, 405);
  EXPECT_EQ(request(port_, "DELETE", "/api/sessions").status, 405);
  EXPECT_EQ(request(port_, "GET", "/ws/sessions/1").status, 400);  // no upgrade
  FrameReader unknown(port_, "/ws/sessions/999");
  EXPECT_FALSE(unknown.connected());
  const auto sessions =
      fromJson<v1::ViewerSessions>(request(port_, "GET", "/api/sessions").body);
  // 403 ×3, 409, 403, 404, 404, 405, 405, 400 and the refused WebSocket
  EXPECT_EQ(sessions.viewer().refused(), 11u);
  // the refused requests changed nothing: the session is where the last accepted one left it
  EXPECT_EQ(server_->sessions().find(id)->session().state(), rt::SessionState::kCreated);
}

TEST_F(ViewerTest, AClosedSessionEndsItsFrames) {
  const std::uint64_t id = createSession("pendulum", "swing", true);
  auto reader = std::make_unique<FrameReader>(port_, "/ws/sessions/" + std::to_string(id));
  ASSERT_TRUE(reader->connected()) << reader->error();
  ASSERT_FALSE(reader->next().empty());
  v1::SessionStats final_stats;
  ASSERT_TRUE(server_->sessions().close(id, &final_stats));
  bool closed = false;
  for (int k = 0; k < 100 && !closed; ++k) {
    const std::string json = reader->next();
    ASSERT_FALSE(json.empty());
    closed = fromJson<v1::ViewerFrame>(json).closed();
  }
  EXPECT_TRUE(closed);
  // then the server closes the WebSocket (a close frame), and once the page has gone its place
  // is free again
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!reader->closedByServer() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(reader->closedByServer());
  EXPECT_EQ(request(port_, "GET", "/api/sessions/" + std::to_string(id) + "/scene").status, 404);
  reader.reset();
  auto pages = [&] {
    return fromJson<v1::ViewerSessions>(request(port_, "GET", "/api/sessions").body)
        .viewer()
        .pages();
  };
  for (int k = 0; k < 100 && pages() != 0; ++k) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(pages(), 0u);
}

// DNS rebinding: a name an attacker points at 127.0.0.1 makes their page "same origin"; without
// a token only IP literals and localhost are served.
TEST_F(ViewerTest, AHostNameIsRefusedWithoutAToken) {
  const std::uint64_t id = createSession("pendulum", "swing", true);
  const std::string port = std::to_string(port_);
  const std::string evil = "Host: evil.example:" + port + "\r\nOrigin: http://evil.example:" +
                           port + "\r\nX-Hilsim-Viewer: 1\r\n";
  // request() sends its own Host first; a second one would be ambiguous, so build the request
  char error[256] = "";
  mg_connection* conn = mg_connect_client("127.0.0.1", port_, 0, error, sizeof error);
  ASSERT_NE(conn, nullptr) << error;
  mg_printf(conn, "POST /api/sessions/%llu/pause HTTP/1.1\r\n%sContent-Length: 0\r\n\r\n",
            static_cast<unsigned long long>(id), evil.c_str());
  ASSERT_GE(mg_get_response(conn, error, sizeof error, 5000), 0) << error;
  EXPECT_EQ(mg_get_response_info(conn)->status_code, 403);
  mg_close_connection(conn);
  EXPECT_EQ(server_->sessions().find(id)->session().state(), rt::SessionState::kRunning);
  // the page itself is served to anyone (it holds nothing); by address and localhost all works
  EXPECT_EQ(request(port_, "GET", "/").status, 200);
  for (const std::string& host : {"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port}) {
    conn = mg_connect_client("127.0.0.1", port_, 0, error, sizeof error);
    ASSERT_NE(conn, nullptr) << error;
    mg_printf(conn, "GET /api/sessions HTTP/1.1\r\nHost: %s\r\n\r\n", host.c_str());
    ASSERT_GE(mg_get_response(conn, error, sizeof error, 5000), 0) << error;
    EXPECT_EQ(mg_get_response_info(conn)->status_code, 200) << host;
    mg_close_connection(conn);
  }
}

TEST_F(ViewerTest, TheAccessTokenGuardsTheApiAndTheFramesButNotThePage) {
  server_->shutdown();
  ServerConfig config = test::loopbackServerConfig();
  config.viewer_enabled = true;
  config.viewer_port = 0;
  config.access_token = "s3cret-token";
  config.session_defaults.mutable_thread()->set_lock_memory(false);
  startServer(config);
  const std::uint64_t id = createSession("pendulum", "swing", true);
  EXPECT_EQ(request(port_, "GET", "/").status, 200);
  EXPECT_EQ(request(port_, "GET", "/api/sessions").status, 401);
  EXPECT_EQ(request(port_, "GET", "/api/sessions", "Authorization: Bearer wrong\r\n").status, 401);
  EXPECT_EQ(request(port_, "GET", "/api/sessions", "Authorization: Bearer s3cret-token\r\n").status,
            200);
  EXPECT_EQ(request(port_, "GET", "/api/sessions?token=s3cret-token").status, 200);
  const std::string frames = "/ws/sessions/" + std::to_string(id);
  EXPECT_FALSE(FrameReader(port_, frames).connected());
  FrameReader reader(port_, frames + "?token=s3cret-token");
  ASSERT_TRUE(reader.connected()) << reader.error();
  EXPECT_FALSE(reader.next().empty());
}

// Each open page holds one of civetweb's workers: with the most pages open the API still answers,
// and one page more is refused.
TEST_F(ViewerTest, TheMostPagesStillLeaveTheApiAnswering) {
  server_->shutdown();
  ServerConfig config = test::loopbackServerConfig();
  config.viewer_enabled = true;
  config.viewer_port = 0;
  config.session_defaults.mutable_thread()->set_lock_memory(false);
  config.max_viewer_pages_per_client = Viewer::kMaxPages;  // every page from this one address
  startServer(config);
  const std::uint64_t id = createSession("pendulum", "swing", true);
  const std::string path = "/ws/sessions/" + std::to_string(id);
  std::vector<std::unique_ptr<FrameReader>> pages;
  for (int k = 0; k < Viewer::kMaxPages; ++k) {
    pages.push_back(std::make_unique<FrameReader>(port_, path));
    ASSERT_TRUE(pages.back()->connected()) << "page " << k << ": " << pages.back()->error();
  }
  for (auto& page : pages) EXPECT_FALSE(page->next().empty());
  EXPECT_FALSE(FrameReader(port_, path).connected());
  for (int k = 0; k < 8; ++k) EXPECT_EQ(request(port_, "GET", "/api/sessions").status, 200);
  pages.pop_back();  // a page closes: its place is free again
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  bool reopened = false;
  while (!reopened && std::chrono::steady_clock::now() < deadline) {
    reopened = FrameReader(port_, path).connected();
    if (!reopened) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(reopened);
}

TEST_F(ViewerTest, ASecondViewerOnTheSamePortDoesNotStart) {
  ServerConfig config = test::loopbackServerConfig();
  config.viewer_port = port_;
  try {
    Viewer second(config, server_->sessions());
    FAIL() << "a second viewer listened on the same port";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("viewer: cannot listen on 127.0.0.1:" +
                                         std::to_string(port_)),
              std::string::npos)
        << e.what();
  }
  // the first one still serves
  EXPECT_EQ(request(port_, "GET", "/api/sessions").status, 200);
}

}  // namespace
}  // namespace hilsim::server
