package gateway

// Which CA bundles HAProxy can take at runtime (docs/gateway.md, "CA files
// at runtime", measured on 2.6.12, 3.0.11, 3.2.26 and 3.4.7): the
// driver replaces a CA file's contents with `set ssl ca-file` and
// `commit ssl ca-file` when its name stays and its bundle changes, and
// HAProxy then verifies with the new bundle
//   - on a bind line (a frontend's client CA, clientauth.go), for every
//     handshake after the commit;
//   - on a server line presenting a client certificate (`crt`);
//   - on a server line presenting none only once the server is created
//     again: the driver then creates the backend's servers again at
//     runtime, each naming the file (runtimeapi/renew.go, plan.Renew).
// So every CA file is named for what it verifies (the port; the
// policy), whatever its bundle, and another bundle is no reload.
