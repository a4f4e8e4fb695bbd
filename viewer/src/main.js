// The hilsim viewer page: the session list, the 3D view of one session (three.js), its joint
// table and plots (uPlot). Talks to the server that served it: GET /api/sessions, GET
// /api/sessions/<id>/scene, POST /api/sessions/<id>/<start|pause|reset>, and the WebSocket
// /ws/sessions/<id> of frames (proto/hilsim/v1/viewer.proto as JSON). The world is z-up.
import * as THREE from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';
import { STLLoader } from 'three/addons/loaders/STLLoader.js';
import { OBJLoader } from 'three/addons/loaders/OBJLoader.js';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import './viewer.css';

const $ = (id) => document.getElementById(id);
const PLOT_SECONDS = 10;  // the plots' window
const MAX_PLOTTED_JOINTS = 6;
const PLOT_COLOURS = ['#4fa3ff', '#ffb347', '#53d48a', '#ff5c5c', '#c38fff', '#5ce0e0'];
const ROLE_MATERIAL = {
  ROLE_LINK: { color: 0x9aa4b1, metalness: 0.3, roughness: 0.5 },
  ROLE_JOINT: { color: 0x4fa3ff, metalness: 0.2, roughness: 0.4 },
  ROLE_INERTIA: { metalness: 0.1, roughness: 0.7, transparent: true, opacity: 0.6 },
  ROLE_VISUAL: { color: 0xb8bec6, metalness: 0.2, roughness: 0.6 },
};
/** A colour per body for its inertia box, so that neighbouring links stand apart. */
function bodyColour(i) {
  return new THREE.Color().setHSL((0.07 + 0.13 * i) % 1, 0.55, 0.55);
}

// What the browser test and a curious user can read: window.hilsimViewer.
const status = {
  sessionId: null,
  sceneLoaded: false,
  frames: 0,
  meshesLoaded: 0,
  lastFrame: null,
  error: '',
  /** World position [x, y, z] of body `i` as drawn now. */
  bodyPosition(i) {
    const group = view.bodies[i];
    return group ? group.position.toArray() : null;
  },
  /** Whether body `i`'s origin is inside the camera's view now. */
  inView(i) {
    const group = view.bodies[i];
    if (!group) return false;
    view.camera.updateMatrixWorld();  // the renderer does it only when it next draws
    const p = group.position.clone().project(view.camera);
    return Math.abs(p.x) <= 1 && Math.abs(p.y) <= 1 && p.z >= -1 && p.z <= 1;
  },
  /** Contact spheres drawn, and force arrows shown now. */
  contacts() {
    return { spheres: view.contacts.length, arrows: view.contacts.filter((c) => c.arrow.visible).length };
  },
  /** Whether the scene has a ground plane. */
  ground() { return !!view.world.getObjectByName('ground'); },
};
window.hilsimViewer = status;

// --- access token (only when the server requires one) ---
let token = sessionStorage.getItem('hilsim-token') || '';
function authHeaders(extra = {}) {
  return token ? { ...extra, Authorization: `Bearer ${token}` } : extra;
}
async function api(path, options = {}) {
  const response = await fetch(path, { ...options, headers: authHeaders(options.headers) });
  const body = await response.json().catch(() => ({}));
  if (response.status === 401) $('token-box').hidden = false;
  if (!response.ok) throw new Error(body.error || `${response.status} ${response.statusText}`);
  return body;
}
$('token-set').onclick = () => {
  token = $('token').value.trim();
  sessionStorage.setItem('hilsim-token', token);
  $('token-box').hidden = true;
  refreshSessions();
};

// --- owner secret: start, pause and reset drive a session, which only its owner (the client
// that created it, with the secret CreateSession returned) or the operator may do. Given in the
// box, or as #owner=… in the address (read once, then dropped from the address).
let owner = sessionStorage.getItem('hilsim-owner') || '';
const ownerInHash = new URLSearchParams(location.hash.slice(1)).get('owner');
if (ownerInHash) {
  owner = ownerInHash;
  sessionStorage.setItem('hilsim-owner', owner);
}
$('owner-set').onclick = () => {
  owner = $('owner').value.trim();
  sessionStorage.setItem('hilsim-owner', owner);
  $('owner-box').hidden = true;
  say('');
};

function say(text) {
  $('message').textContent = text;
  status.error = text;
}

// --- the 3D view ---
const view = (() => {
  const container = $('view');
  const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
  renderer.setPixelRatio(Math.min(window.devicePixelRatio, 2));
  container.appendChild(renderer.domElement);
  const scene = new THREE.Scene();
  scene.background = new THREE.Color(0x15181d);
  const camera = new THREE.PerspectiveCamera(45, 1, 0.01, 1000);
  camera.up.set(0, 0, 1);
  const controls = new OrbitControls(camera, renderer.domElement);
  controls.enableDamping = true;
  scene.add(new THREE.HemisphereLight(0xdde6ff, 0x30343a, 1.6));
  const sun = new THREE.DirectionalLight(0xffffff, 1.8);
  sun.position.set(3, -2, 6);
  scene.add(sun);
  const world = new THREE.Group();  // everything of the current session
  scene.add(world);

  function resize() {
    const { clientWidth: w, clientHeight: h } = container;
    renderer.setSize(w, h);
    camera.aspect = w / Math.max(h, 1);
    camera.updateProjectionMatrix();
  }
  window.addEventListener('resize', resize);
  resize();
  // Draw only when something changed (a frame came, the camera moved, the window changed): an
  // idle page costs nothing, and a busy one leaves the browser time for its other work.
  const state = { dirty: true };
  controls.addEventListener('change', () => { state.dirty = true; });
  window.addEventListener('resize', () => { state.dirty = true; });
  renderer.setAnimationLoop(() => {
    controls.update();  // damping: moves the camera (and fires 'change') until it settles
    if (!state.dirty) return;
    state.dirty = false;
    renderer.render(scene, camera);
  });
  return {
    scene, camera, controls, world, bodies: [], closures: [], springs: [], flexible: [],
    contacts: [], jointMeshes: [], fitted: false, follow: null,
    redraw() { state.dirty = true; },
  };
})();

function quaternion(wxyz) {
  return new THREE.Quaternion(wxyz[1], wxyz[2], wxyz[3], wxyz[0]);
}

/** The model's own colour for a visual, when it gives one. */
function withModelColour(material, shape) {
  if (shape.rgba && shape.rgba.length === 4) {
    material.color = new THREE.Color(shape.rgba[0], shape.rgba[1], shape.rgba[2]);
    material.transparent = shape.rgba[3] < 1;
    material.opacity = shape.rgba[3];
  }
  return material;
}

/** A URDF mesh: a group placed at once, the file's geometry added when it has arrived. */
function meshShape(shape, material) {
  const group = new THREE.Group();
  group.position.fromArray(shape.position);
  group.quaternion.copy(quaternion(shape.rotation));
  if (shape.scale && shape.scale.length === 3) group.scale.fromArray(shape.scale);
  const ours = shape.rgba && shape.rgba.length === 4;
  fetch(shape.mesh_url, { headers: authHeaders() })
    .then((r) => (r.ok ? r.arrayBuffer() : Promise.reject(new Error(`${r.status}`))))
    .then((bytes) => {
      if (shape.mesh_format === 'stl') {
        const geometry = new STLLoader().parse(bytes);
        geometry.computeVertexNormals();
        group.add(new THREE.Mesh(geometry, material));
      } else {
        const object = new OBJLoader().parse(new TextDecoder().decode(bytes));
        // the model's colour wins; without one, the file's own materials stay
        if (ours) object.traverse((child) => { if (child.isMesh) child.material = material; });
        group.add(object);
      }
      status.meshesLoaded += 1;
      view.redraw();
    })
    .catch((e) => say(`mesh ${shape.mesh_url}: ${e.message}`));
  return group;
}

function shapeMesh(shape, body) {
  let geometry;
  const s = shape.size;
  if (shape.kind === 'KIND_MESH') {
    const material = new THREE.MeshStandardMaterial(ROLE_MATERIAL.ROLE_VISUAL);
    return meshShape(shape, withModelColour(material, shape));
  }
  if (shape.kind === 'KIND_BOX') {
    geometry = new THREE.BoxGeometry(s[0], s[1], s[2]);
  } else if (shape.kind === 'KIND_CYLINDER') {
    geometry = new THREE.CylinderGeometry(s[0], s[0], s[1], 20);
    geometry.rotateX(Math.PI / 2);  // three's cylinders run along y; ours along z
  } else {
    geometry = new THREE.SphereGeometry(s[0], 20, 14);
  }
  const material = new THREE.MeshStandardMaterial(ROLE_MATERIAL[shape.role]);
  if (shape.role === 'ROLE_INERTIA') material.color = bodyColour(body);
  withModelColour(material, shape);
  const mesh = new THREE.Mesh(geometry, material);
  mesh.position.fromArray(shape.position);
  mesh.quaternion.copy(quaternion(shape.rotation));
  return mesh;
}

/** A segment drawn as a thin cylinder between two points, moved each frame. */
function segment(radius, colour) {
  const geometry = new THREE.CylinderGeometry(radius, radius, 1, 10);
  geometry.rotateX(Math.PI / 2);
  const mesh = new THREE.Mesh(geometry, new THREE.MeshStandardMaterial({ color: colour }));
  mesh.visible = false;
  return mesh;
}
const Z = new THREE.Vector3(0, 0, 1);
function placeSegment(mesh, a, b) {
  const d = new THREE.Vector3().subVectors(b, a);
  const length = d.length();
  mesh.visible = length > 1e-9;
  if (!mesh.visible) return;
  mesh.position.addVectors(a, b).multiplyScalar(0.5);
  mesh.quaternion.setFromUnitVectors(Z, d.divideScalar(length));
  mesh.scale.set(1, 1, length);
}

function buildScene(scene) {
  view.world.clear();
  view.bodies = [];
  view.closures = [];
  view.springs = [];
  view.flexible = [];
  view.contacts = [];
  view.jointMeshes = [];
  view.fitted = false;
  view.follow = null;
  const extent = scene.extent;
  const radius = Math.min(Math.max(0.015 * extent, 0.002), 0.05);

  // "Up" is against gravity (most models: +z); the ground is the plane through W's origin
  // normal to it, the world frame is drawn at that origin.
  const g = new THREE.Vector3().fromArray(scene.model.gravity || [0, 0, -9.81]);
  const up = g.lengthSq() > 0 ? g.clone().negate().normalize() : new THREE.Vector3(0, 0, 1);
  // a model on the ground walks: its floor reaches further than its own size
  const ground = scene.ground;
  const size = Math.max(1, Math.ceil((ground ? 8 : 2) * extent));
  const grid = new THREE.GridHelper(size, size * 4 > 80 ? size : size * 4, 0x3a4350, 0x272c34);
  grid.quaternion.setFromUnitVectors(new THREE.Vector3(0, 1, 0), up);  // three's grid lies in xz
  if (ground) {
    // the contact plane: z = height, solid, the grid a hair above it
    const plane = new THREE.Mesh(new THREE.PlaneGeometry(size, size),
      new THREE.MeshStandardMaterial({ color: 0x2b3139, roughness: 0.95, metalness: 0.0 }));
    plane.name = 'ground';
    plane.position.z = Number(ground.height || 0);
    grid.position.z = plane.position.z + 1e-4 * size;
    view.world.add(plane);
  }
  view.world.add(grid);
  const axes = new THREE.AxesHelper(Math.max(0.3, 0.4 * extent));
  view.world.add(axes);

  scene.bodies.forEach((body, i) => {
    const group = new THREE.Group();
    group.name = body.name;
    for (const shape of body.shapes) {
      const mesh = shapeMesh(shape, i);
      group.add(mesh);
      if (shape.role === 'ROLE_JOINT') view.jointMeshes[i] = mesh;
    }
    view.world.add(group);
    view.bodies.push(group);
    if (body.nodes > 0) {
      const pieces = [];
      for (let k = 0; k + 1 < body.nodes; ++k) {
        const piece = segment(1.2 * radius, 0x53d48a);
        view.world.add(piece);
        pieces.push(piece);
      }
      view.flexible.push({ body: i, nodes: body.nodes, pieces });
    }
  });
  for (const closure of scene.closures) {
    const gap = segment(0.5 * radius, 0xff5c5c);
    const marker = new THREE.Mesh(new THREE.SphereGeometry(1.6 * radius, 16, 12),
      new THREE.MeshStandardMaterial({ color: 0xff5c5c }));
    view.world.add(gap, marker);
    view.closures.push({ closure, gap, marker });
  }
  for (const spring of scene.springs) {
    const line = segment(0.6 * radius, 0xe8d44d);
    view.world.add(line);
    view.springs.push(line);
  }
  // Contact spheres on their bodies, and an arrow per sphere for the ground's force on it: its
  // length is the force over the model's weight times the model's size (the arrows of a
  // standing robot add up to about its height).
  const weight = Math.max(Number(scene.model.total_mass || 0) * g.length(), 1e-9);
  for (const contact of scene.contacts || []) {
    const sphere = new THREE.Mesh(
      new THREE.SphereGeometry(Math.max(Number(contact.radius || 0), 0.5 * radius), 16, 12),
      new THREE.MeshStandardMaterial({ color: 0xffb347, roughness: 0.5 }));
    sphere.position.fromArray(contact.center);
    if (view.bodies[contact.body]) view.bodies[contact.body].add(sphere);
    const arrow = new THREE.ArrowHelper(new THREE.Vector3(0, 0, 1), new THREE.Vector3(), 1,
      0x53d48a, 0.25 * extent * 0.2, 0.12 * extent * 0.2);
    arrow.visible = false;
    view.world.add(arrow);
    view.contacts.push({ contact, sphere, arrow, scale: 0.8 * extent / weight });
  }
  // A floating base: the camera follows it (the body its free joint moves).
  const root = scene.model.joints.find((j) => j.type === 'JOINT_TYPE_FREE' &&
    j.parent_body === scene.bodies[0].name);
  if (root) view.follow = { body: scene.bodies.findIndex((b) => b.name === root.body), last: null };
  // Until the first frame places the bodies (fitCamera), look from a corner above the ground.
  view.up = up;
  view.camera.up.copy(up);
  lookAt(new THREE.Vector3().copy(up).multiplyScalar(0.35 * extent), extent);
}

/** Looks at `center` from a corner above it, far enough for a sphere of `radius` to fill the
 * view's narrower side. */
function lookAt(center, radius) {
  const up = view.up;
  const side = Math.abs(up.x) < 0.9 ? new THREE.Vector3(1, 0, 0) : new THREE.Vector3(0, 1, 0);
  side.addScaledVector(up, -side.dot(up)).normalize();
  const across = new THREE.Vector3().crossVectors(up, side);
  const camera = view.camera;
  const halfFov = THREE.MathUtils.degToRad(camera.fov) / 2;
  const narrower = Math.min(halfFov, Math.atan(Math.tan(halfFov) * camera.aspect));
  const distance = 1.15 * radius / Math.sin(narrower);
  const direction = side.clone().addScaledVector(across, -1.3).addScaledVector(up, 0.8).normalize();
  camera.position.copy(center).addScaledVector(direction, distance);
  view.controls.target.copy(center);
  camera.near = Math.max(distance / 500, 1e-4);
  camera.far = distance * 200;
  camera.updateProjectionMatrix();
  view.redraw();
}

/** Fits the camera to the bodies as drawn now (their shapes, or their origins for shapeless
 * ones): the model fills the view whatever its size and wherever it stands. */
function fitCamera() {
  const box = new THREE.Box3();
  view.world.updateMatrixWorld(true);  // the poses just set: the renderer has not drawn them yet
  view.bodies.forEach((group, i) => {
    if (i === 0) return;  // the world's frame is at the origin, wherever the robot is
    box.expandByPoint(group.position);
    box.expandByObject(group);
  });
  if (box.isEmpty()) return;
  const sphere = box.getBoundingSphere(new THREE.Sphere());
  lookAt(sphere.center, Math.max(sphere.radius, 0.05));
  view.fitted = true;
}

function applyPoses(frame) {
  view.redraw();
  const p = frame.poses;
  for (let i = 0; i < view.bodies.length && 7 * i + 6 < p.length; ++i) {
    const group = view.bodies[i];
    group.position.set(p[7 * i], p[7 * i + 1], p[7 * i + 2]);
    group.quaternion.set(p[7 * i + 4], p[7 * i + 5], p[7 * i + 6], p[7 * i + 3]);
  }
  const point = (array, k) => new THREE.Vector3(array[3 * k], array[3 * k + 1], array[3 * k + 2]);
  view.closures.forEach(({ gap, marker }, k) => {
    if (frame.closure_points.length < 6 * (k + 1)) return;
    const a = point(frame.closure_points, 2 * k);
    placeSegment(gap, a, point(frame.closure_points, 2 * k + 1));
    marker.position.copy(a);
  });
  view.springs.forEach((line, k) => {
    if (frame.spring_points.length < 6 * (k + 1)) return;
    placeSegment(line, point(frame.spring_points, 2 * k), point(frame.spring_points, 2 * k + 1));
  });
  // contact forces: an arrow from each touching sphere's lowest point along the ground's force
  view.contacts.forEach(({ arrow, scale }, k) => {
    const force = frame.contact_force || [];
    const points = frame.contact_points || [];
    if (force.length < 3 * (k + 1) || points.length < 3 * (k + 1)) { arrow.visible = false; return; }
    const f = point(force, k);
    const length = f.length() * scale;
    arrow.visible = length > 1e-6;
    if (!arrow.visible) return;
    arrow.position.copy(point(points, k));
    arrow.setDirection(f.normalize());
    arrow.setLength(length, Math.min(0.3 * length, 0.05), Math.min(0.15 * length, 0.025));
  });
  // a joint at its stop turns red
  const limits = frame.limit_force || [];
  if (model) {
    model.joints.forEach((joint, j) => {
      const mesh = view.jointMeshes[j + 1];
      if (!mesh || !mesh.material) return;
      const pushing = joint.nv === 1 && limits.length > joint.v_start && limits[joint.v_start] !== 0;
      mesh.material.color.setHex(pushing ? 0xff5c5c : ROLE_MATERIAL.ROLE_JOINT.color);
    });
  }
  // follow a floating base: camera and target move with it, the user's orbit kept
  if (view.follow && view.follow.body > 0 && view.bodies[view.follow.body]) {
    const now = view.bodies[view.follow.body].position.clone();
    if (view.follow.last) {
      const moved = now.clone().sub(view.follow.last);
      view.camera.position.add(moved);
      view.controls.target.add(moved);
    }
    view.follow.last = now;
  }
  if (!view.fitted) fitCamera();
  let node = 0;
  for (const body of view.flexible) {
    for (let k = 0; k + 1 < body.nodes; ++k) {
      if (frame.nodes.length >= 3 * (node + k + 2)) {
        placeSegment(body.pieces[k], point(frame.nodes, node + k), point(frame.nodes, node + k + 1));
      }
    }
    node += body.nodes;
  }
}

// --- joint table and plots ---
let model = null;
let rows = [];
const plotted = new Set();
let jointPlot = null;
let timingPlot = null;
let jointData = [[]];
let timingData = [[], [], [], [], []];
let lastMisses = null;

function plotWidth() {
  return Math.max(200, document.querySelector('aside').clientWidth - 36);
}

function makeJointPlot() {
  if (jointPlot) jointPlot.destroy();
  const chosen = [...plotted];
  jointData = [[], ...chosen.map(() => [])];
  jointPlot = new uPlot({
    width: plotWidth(), height: 170,
    legend: { live: false },
    scales: { x: { time: false } },
    axes: [{ stroke: '#8a93a0', label: 'simulation time [s]', grid: { stroke: '#2a3038' } },
      { stroke: '#8a93a0', grid: { stroke: '#2a3038' } }],
    series: [{ label: 't' }, ...chosen.map((j, k) => ({
      label: rows[j].entry.name, stroke: PLOT_COLOURS[k % PLOT_COLOURS.length], width: 1.5,
    }))],
  }, jointData, $('joint-plot'));
}

function makeTimingPlot() {
  if (timingPlot) timingPlot.destroy();
  timingData = [[], [], [], [], []];
  timingPlot = new uPlot({
    width: plotWidth(), height: 170,
    legend: { live: false },
    scales: { x: { time: false }, y: { distr: 3 }, misses: { range: (u, min, max) => [0, Math.max(1, max)] } },
    axes: [{ stroke: '#8a93a0', label: 'wall time on this page [s]', grid: { stroke: '#2a3038' } },
      { stroke: '#8a93a0', grid: { stroke: '#2a3038' }, size: 56 },
      { scale: 'misses', side: 1, stroke: '#ff5c5c', grid: { show: false } }],
    series: [{ label: 't' },
      { label: 'period', stroke: '#8a93a0', dash: [4, 4], width: 1 },
      { label: 'compute p99', stroke: '#4fa3ff', width: 1.5 },
      { label: 'compute max', stroke: '#ffb347', width: 1.5 },
      { label: 'misses/s', stroke: '#ff5c5c', width: 1.5, scale: 'misses' }],
  }, timingData, $('timing-plot'));
}

/** One row per joint, then one per modal coordinate of a flexible body (not in any joint). */
function tableEntries() {
  const range = (start, n) => Array.from({ length: n }, (_, k) => start + k);
  const entries = model.joints.map((joint) => ({
    name: joint.name, qs: range(joint.q_start, joint.nq), vs: range(joint.v_start, joint.nv),
  }));
  const usedQ = new Set(entries.flatMap((e) => e.qs));
  const usedV = new Set(entries.flatMap((e) => e.vs));
  const freeQ = range(0, model.nq).filter((i) => !usedQ.has(i));
  const freeV = range(0, model.nv).filter((i) => !usedV.has(i));
  // modal coordinates have one q and one v each, in the same order
  freeQ.forEach((qi, k) => entries.push({
    name: model.q_labels[qi], qs: [qi], vs: k < freeV.length ? [freeV[k]] : [],
  }));
  return entries;
}

function buildTable() {
  const body = $('joints').tBodies[0];
  body.replaceChildren();
  rows = tableEntries().map((entry, j) => {
    const row = body.insertRow();
    const tick = document.createElement('input');
    tick.type = 'checkbox';
    tick.checked = plotted.has(j);
    tick.onchange = () => {
      if (tick.checked && plotted.size >= MAX_PLOTTED_JOINTS) { tick.checked = false; return; }
      if (tick.checked) plotted.add(j); else plotted.delete(j);
      makeJointPlot();
    };
    row.insertCell().append(tick);
    row.insertCell().textContent = entry.name;
    const cells = [row.insertCell(), row.insertCell(), row.insertCell(), row.insertCell()];
    return { entry, cells, row };
  });
}

const fmt = (x) => (Math.abs(x) >= 1e4 || (Math.abs(x) < 1e-3 && x !== 0)
  ? x.toExponential(2) : x.toFixed(3));
const pick = (values, indices) => indices.map((i) => fmt(values[i])).join(' ');

let lastTableUpdate = 0;
function updateTable(frame) {
  const now = performance.now();
  if (now - lastTableUpdate < 100) return;  // ten updates a second are readable
  lastTableUpdate = now;
  const limits = frame.limit_force || [];
  const commanded = frame.tau_commanded || [];
  const counts = frame.constraints || {};
  const count = (list, i) => Number((list || [])[i] || 0);
  for (const { entry, cells, row } of rows) {
    cells[0].textContent = pick(frame.q, entry.qs);
    cells[1].textContent = pick(frame.v, entry.vs);
    cells[2].textContent = pick(frame.tau, entry.vs);
    // at a stop: the row is red; a drive cut by its limit: τ is orange, with what was asked
    const atStop = entry.vs.some((i) => limits.length > i && limits[i] !== 0);
    const cut = entry.vs.some((i) => commanded.length > i && commanded[i] !== frame.tau[i]);
    row.classList.toggle('at-limit', atStop);
    cells[2].classList.toggle('saturated', cut);
    cells[2].title = cut ? `asked ${pick(commanded, entry.vs)}` : '';
    // saturations + velocity cuts, and cycles at a stop, since start or reset
    const saturations = entry.vs.reduce((n, i) => n + count(counts.effort_saturations, i) +
      count(counts.velocity_cuts, i), 0);
    const stops = entry.vs.reduce((n, i) => n + count(counts.limit_cycles, i), 0);
    cells[3].textContent = saturations || stops ? `${saturations} / ${stops}` : '';
  }
  // injected faults (ground truth): listed, and the rows of the joints they act on marked
  const faults = frame.faults || [];
  const where = (f) => (!f.joint ? '' : f.joint === '*' ? ' on every joint' : ` on ${f.joint}`);
  $('faults').textContent = faults.length === 0 ? '' : 'injected: ' + faults.map((f) =>
    `${(f.type || '').replace('FAULT_TYPE_', '').toLowerCase()}${where(f)} (#${f.id})`).join(', ');
  for (const { entry, row } of rows) {
    row.classList.toggle('faulted', faults.some((f) => f.joint === '*' || f.joint === entry.name));
  }
  const c = frame.constraints;
  $('contacts').textContent = c && (c.contacts_active || c.solver_max_iterations)
    ? `contacts ${c.contacts_active || 0}, stops ${c.limits_active || 0}; solver ` +
      `${c.solver_iterations || 0} sweeps (most ${c.solver_max_iterations || 0})`
    : '';
}

function trim(data, now) {
  while (data[0].length > 0 && data[0][0] < now - PLOT_SECONDS) for (const s of data) s.shift();
}

const pageStart = performance.now();
let lastPlotUpdate = 0;
function updatePlots(frame, periodNs) {
  const t = frame.time;
  if (jointData[0].length > 0 && t < jointData[0][jointData[0].length - 1]) {
    for (const s of jointData) s.length = 0;  // a reset: time went back
  }
  jointData[0].push(t);
  [...plotted].forEach((j, k) => jointData[k + 1].push(frame.q[rows[j].entry.qs[0]]));
  trim(jointData, t);

  const wall = (performance.now() - pageStart) / 1000;
  const timing = frame.timing || {};
  const compute = timing.compute_time || {};
  // Misses per second over the last half second or more: frames can arrive in bursts, and a
  // rate over a few milliseconds says little.
  const misses = Number(timing.deadline_misses || 0);
  if (!lastMisses || misses < lastMisses.misses) lastMisses = { wall, misses, rate: 0 };
  if (wall - lastMisses.wall >= 0.5) {
    lastMisses = { wall, misses, rate: (misses - lastMisses.misses) / (wall - lastMisses.wall) };
  }
  const rate = lastMisses.rate;
  timingData[0].push(wall);
  timingData[1].push(periodNs / 1000);
  timingData[2].push(Math.max(Number(compute.p99_ns || 0) / 1000, 0.1));  // log axis
  timingData[3].push(Math.max(Number(compute.max_ns || 0) / 1000, 0.1));
  timingData[4].push(rate);
  trim(timingData, wall);
  // Every frame adds its point; the plots are redrawn ten times a second. A redraw per frame
  // (30 a second, two canvases) is more than a slow machine's page keeps up with: frames would
  // queue in the socket and what the page shows (its state too) fall seconds behind.
  const now = performance.now();
  if (now - lastPlotUpdate < 100) return;
  lastPlotUpdate = now;
  jointPlot.setData(jointData);
  timingPlot.setData(timingData);
  $('timing').textContent = `cycles ${timing.cycles || 0}, deadline misses ${misses}` +
    `, skipped ${timing.skipped_cycles || 0}; compute p50 ${(Number(compute.p50_ns || 0) / 1000).toFixed(1)} µs` +
    ` (figures since start or reset)`;
}

// --- sessions ---
let sessions = [];
let current = null;  // { id, socket, scene }

const STATE_NAME = (s) => (s || '').replace('SESSION_STATE_', '');

async function refreshSessions() {
  try {
    const body = await api('/api/sessions');
    sessions = (body.list && body.list.sessions) || [];
    const select = $('session');
    const wanted = current ? current.id : new URLSearchParams(location.hash.slice(1)).get('session');
    select.replaceChildren(...sessions.map((s) => {
      const option = new Option(`${s.session_id} ${s.name} (${s.model.name})`, s.session_id);
      return option;
    }));
    if (sessions.length === 0) {
      say('no session: create one (hilsim session create, or the Python client)');
      return;
    }
    const chosen = sessions.find((s) => s.session_id === wanted) || sessions[0];
    select.value = chosen.session_id;
    if (!current || current.id !== chosen.session_id) openSession(chosen.session_id);
    if (status.error.startsWith('no session')) say('');
  } catch (e) {
    say(`session list: ${e.message}`);
  }
}

// --- shared workers (rt.workers): their load and busy share, refreshed every two seconds ---
async function refreshWorkers() {
  try {
    const body = await api('/api/sessions');
    const workers = (body.list && body.list.workers) || [];
    const percent = (x) => `${(100 * Number(x || 0)).toFixed(1)} %`;
    $('workers').textContent = workers.length === 0 ? '' : 'workers: ' + workers.map((w) => {
      const cpu = w.cpu ?? 0;  // proto3 JSON leaves zeros out
      return `#${w.index || 0}${cpu >= 0 ? ` on CPU ${cpu}` : ''}: load ${percent(w.load)}, ` +
        `busy ${percent(w.utilisation)}, ${w.sessions || 0} sessions`;
    }).join('; ');
  } catch (e) {
    // the session list says what is wrong with the server
  }
}
setInterval(refreshWorkers, 2000);

// One open session at a time: `current` is replaced on every open, and every callback checks
// that it still belongs to the one it was made for (a quick A → B → A must not leave two sockets).
async function openSession(id) {
  if (current && current.socket) current.socket.close();
  const mine = { id, socket: null, scene: null, closed: false };
  current = mine;
  status.sessionId = id;
  status.sceneLoaded = false;
  location.hash = `session=${id}`;
  try {
    const scene = await api(`/api/sessions/${id}/scene`);
    if (current !== mine) return;
    mine.scene = scene;
    model = scene.model;
    plotted.clear();
    model.joints.slice(0, 3).forEach((_, j) => plotted.add(j));
    buildScene(scene);
    buildTable();
    makeJointPlot();
    makeTimingPlot();
    lastMisses = null;
    status.sceneLoaded = true;
    connect(mine);
  } catch (e) {
    if (current === mine) current = null;  // the next refresh of the list tries again
    say(`session ${id}: ${e.message}`);
  }
}

function connect(mine) {
  const query = token ? `?token=${encodeURIComponent(token)}` : '';
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  const socket = new WebSocket(`${scheme}://${location.host}/ws/sessions/${mine.id}${query}`);
  mine.socket = socket;
  const keepAlive = setInterval(() => socket.readyState === 1 && socket.send('{}'), 2000);
  socket.onmessage = (event) => {
    if (current !== mine || mine.socket !== socket) return;
    const frame = JSON.parse(event.data);
    if (frame.closed) {
      mine.closed = true;  // the server closes the socket: no reconnection
      showState('CLOSED');
      say(`session ${mine.id} was closed`);
      return;
    }
    status.frames += 1;
    status.lastFrame = frame;
    applyPoses(frame);
    updateTable(frame);
    updatePlots(frame, Number(mine.scene.control_period_ns));
    showState(STATE_NAME(frame.state));
    $('clock').textContent = `t ${frame.time.toFixed(3)} s · cycle ${frame.cycle}` +
      ` · ${frame.real_time_factor.toFixed(2)}× real time`;
    if (frame.fault) say(frame.fault);
  };
  socket.onclose = () => {
    clearInterval(keepAlive);
    if (current !== mine || mine.socket !== socket || mine.closed) return;
    // The server went away (restarted?): open the session again, scene included — a new
    // server's session of the same id may be another model.
    setTimeout(() => { if (current === mine) openSession(mine.id); }, 1000);
  };
}

function showState(name) {
  const badge = $('state');
  badge.textContent = name;
  badge.className = `badge ${name}`;
  $('start').disabled = !['CREATED', 'PAUSED'].includes(name);
  $('pause').disabled = name !== 'RUNNING';
  $('reset').disabled = name === 'CLOSED';
}

async function action(name) {
  if (!current) return;
  try {
    const headers = { 'X-Hilsim-Viewer': '1' };
    if (owner) headers['X-Hilsim-Owner'] = owner;
    await api(`/api/sessions/${current.id}/${name}`, { method: 'POST', headers });
    say('');
  } catch (e) {
    if (e.message.includes('owner secret')) $('owner-box').hidden = false;
    say(`${name}: ${e.message}`);
  }
}
$('start').onclick = () => action('start');
$('pause').onclick = () => action('pause');
$('reset').onclick = () => action('reset');
$('session').onchange = (event) => openSession(event.target.value);

refreshSessions();
refreshWorkers();
setInterval(refreshSessions, 2000);
