// `llmrun serve` for the node tests: started on a free port of 127.0.0.1,
// resolved with the process and its URL once it listens.
import { spawn } from 'node:child_process';

export function startServer(llmrun, bundle, ...args) {
  const server = spawn(llmrun, ['serve', bundle, '--port', '0', ...args]);
  let log = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${log}`)), 60000);
    server.stderr.on('data', (data) => {
      log += data;
      const match = log.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
      if (match) {
        clearTimeout(timer);
        resolve({ server, url: match[1] });
      }
    });
    server.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${log}`)));
  });
}
