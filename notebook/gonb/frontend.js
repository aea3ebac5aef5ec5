// goaccel's browser side of gonbui's comms (widgets, gonbui/dom): it opens
// a Jupyter comm with target "gonb_comm" to the kernel, over a WebSocket of
// its own to the Jupyter server (the code of an output cannot reach the
// notebook's kernel connection), and offers the API gonbui's JavaScript
// uses: globalThis.gonb_comm.{send, subscribe, unsubscribe,
// newSyncedVariable, close}.
(() => {
  const kernelId = "{{KERNEL_ID}}";
  if (globalThis.gonb_comm && globalThis.gonb_comm.kernelId === kernelId && !globalThis.gonb_comm.closed) {
    return; // already connected to this kernel
  }
  if (globalThis.gonb_comm) {
    globalThis.gonb_comm.close();
  }
  let config = {};
  try {
    const el = document.getElementById("jupyter-config-data");
    if (el) config = JSON.parse(el.textContent);
  } catch (e) { /* no page configuration: defaults below */ }
  let base = config.wsUrl || config.baseUrl || "/";
  if (!base.endsWith("/")) base += "/";
  if (!/^wss?:/.test(base)) {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    base = scheme + location.host + (base.startsWith("/") ? base : "/" + base);
  }
  let url = base + "api/kernels/" + kernelId + "/channels";
  if (config.token) url += "?token=" + encodeURIComponent(config.token);

  const uuid = () => (globalThis.crypto && crypto.randomUUID) ? crypto.randomUUID() :
    "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx".replace(/[xy]/g, (c) => {
      const r = Math.random() * 16 | 0;
      return (c === "x" ? r : (r & 3 | 8)).toString(16);
    });
  const session = uuid();
  const commId = uuid();
  let nextId = 0;
  const listeners = new Map(); // address -> Map(id -> callback)
  const addressOf = new Map(); // id -> address
  const variables = new Map(); // address -> synced variable
  let ready = false;
  const waiting = []; // messages sent before the comm was acknowledged

  const ws = new WebSocket(url);
  const raw = (type, content) => JSON.stringify({
    header: {msg_id: uuid(), msg_type: type, session: session, username: "", date: new Date().toISOString(), version: "5.4"},
    parent_header: {}, metadata: {}, content: content, channel: "shell", buffers: [],
  });
  const post = (data) => {
    const m = raw("comm_msg", {comm_id: commId, data: data});
    if (ready) ws.send(m); else waiting.push(m);
  };

  const comm = {
    kernelId: kernelId,
    closed: false,
    send(address, value) { post({address: address, value: value}); },
    subscribe(address, callback) {
      const id = "gonb_sub_" + (nextId++);
      if (!listeners.has(address)) listeners.set(address, new Map());
      listeners.get(address).set(id, callback);
      addressOf.set(id, address);
      return id;
    },
    unsubscribe(id) {
      const address = addressOf.get(id);
      if (address === undefined) return;
      addressOf.delete(id);
      const l = listeners.get(address);
      if (l) {
        l.delete(id);
        if (l.size === 0) listeners.delete(address);
      }
    },
    newSyncedVariable(address, value) {
      let v = variables.get(address);
      if (v) {
        v.set(value);
        return v;
      }
      v = syncedVariable(address, value);
      variables.set(address, v);
      return v;
    },
    close() {
      comm.closed = true;
      if (globalThis.gonb_comm === comm) delete globalThis.gonb_comm;
      try { ws.close(); } catch (e) { /* already closed */ }
    },
  };

  // A value kept equal in the browser and in the cells: set sends it to
  // the kernel, values from the kernel reach the variable's subscribers.
  function syncedVariable(address, initial) {
    let value = null;
    const subs = new Map();
    const update = (x) => {
      if (x === value) return;
      value = x;
      for (const cb of subs.values()) cb(x);
    };
    comm.subscribe(address, (_, x) => update(x));
    const v = {
      get() { return value; },
      set(x) {
        if (x === value) return;
        update(x);
        comm.send(address, x);
      },
      subscribe(cb) { const id = "gonb_var_" + (nextId++); subs.set(id, cb); return id; },
      unsubscribe(id) { subs.delete(id); },
    };
    v.set(initial);
    return v;
  }

  ws.onopen = () => {
    ws.send(raw("comm_open", {comm_id: commId, target_name: "gonb_comm", data: {kernel_id: kernelId}}));
  };
  ws.onmessage = (event) => {
    let msg;
    try { msg = JSON.parse(event.data); } catch (e) { return; }
    if (msg.msg_type === "comm_close" && msg.content && msg.content.comm_id === commId) {
      comm.close();
      return;
    }
    if (msg.msg_type !== "comm_msg" || !msg.content || msg.content.comm_id !== commId) return;
    const data = msg.content.data || {};
    if (data.address === "#comm_open_ack") {
      ready = true;
      while (waiting.length) ws.send(waiting.shift());
      return;
    }
    if (data.address === "#heartbeat/ping") {
      post({address: "#heartbeat/pong", value: true});
      return;
    }
    if (data.read_request) {
      const v = variables.get(data.address);
      if (v) post({address: data.address, value: v.get()});
      return;
    }
    const l = listeners.get(data.address);
    if (!l) return;
    for (const cb of Array.from(l.values())) cb(data.address, data.value);
  };
  ws.onclose = () => {
    comm.closed = true;
    if (globalThis.gonb_comm === comm) delete globalThis.gonb_comm;
  };
  globalThis.gonb_comm = comm;
})();
