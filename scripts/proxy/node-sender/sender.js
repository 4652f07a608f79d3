// A backend's FCM send using only Node's core modules, the way the Node Admin SDK does it: the service-account
// assertion exchanged at the account's token_uri, then the send, each an https.request through the agent the app
// gives (firebase-admin's `httpAgent` option). Node before 24 has no proxy support of its own for `https`, so the agent
// here is the few lines a proxy agent is (CONNECT, then TLS over the tunnel); NODE_EXTRA_CA_CERTS makes Node trust the
// relay's CA. It posts to oauth2.googleapis.com and fcm.googleapis.com and knows nothing of the relay.
//
//   NODE_EXTRA_CA_CERTS=relay-ca.pem HTTPS_PROXY=http://127.0.0.1:P node sender.js SERVICE_ACCOUNT.json TOKEN
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const https = require('https');
const tls = require('tls');

/** An agent that opens each connection through the HTTPS proxy in HTTPS_PROXY (what https-proxy-agent does). */
class TunnelAgent extends https.Agent {
  constructor(proxy) {
    super({ keepAlive: false });
    this.proxy = new URL(proxy);
  }

  createConnection(options, callback) {
    const connect = http.request({ host: this.proxy.hostname, port: this.proxy.port, method: 'CONNECT',
      path: `${options.host}:${options.port}` });
    connect.on('connect', (answer, socket) => {
      if (answer.statusCode !== 200) {
        socket.destroy();
        callback(new Error(`the proxy answered CONNECT ${options.host}:${options.port} with ${answer.statusCode}`));
        return;
      }
      callback(null, tls.connect({ socket, servername: options.servername || options.host, ALPNProtocols: ['http/1.1'] }));
    });
    connect.on('error', callback);
    connect.end();
  }
}

function post(agent, url, headers, body) {
  return new Promise((resolve, reject) => {
    const request = https.request(url, { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } },
      (answer) => {
        let text = '';
        answer.setEncoding('utf8');
        answer.on('data', (part) => { text += part; });
        answer.on('end', () => resolve([answer.statusCode, text.trim()]));
      });
    request.on('error', reject);
    request.end(body);
  });
}

const base64url = (data) => Buffer.from(data).toString('base64url');

async function main() {
  if (process.argv.length !== 4) {
    console.error('usage: node sender.js SERVICE_ACCOUNT.json TOKEN');
    process.exit(64);
  }
  const account = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const agent = new TunnelAgent(process.env.HTTPS_PROXY);
  const now = Math.floor(Date.now() / 1000);
  const header = base64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: account.private_key_id }));
  const claims = base64url(JSON.stringify({ iss: account.client_email, scope: 'https://www.googleapis.com/auth/firebase.messaging',
    aud: account.token_uri, iat: now, exp: now + 3600 }));
  const signature = crypto.sign('RSA-SHA256', Buffer.from(`${header}.${claims}`), account.private_key).toString('base64url');
  const form = new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
    assertion: `${header}.${claims}.${signature}` }).toString();
  const [tokenStatus, tokenText] = await post(agent, account.token_uri, { 'content-type': 'application/x-www-form-urlencoded' }, form);
  console.log(`token ${tokenStatus}${tokenStatus === 200 ? '' : ' ' + tokenText}`);
  if (tokenStatus !== 200) process.exit(1);
  const message = JSON.stringify({ message: { token: process.argv[3], data: { sender: 'node' } } });
  const [sendStatus, sendText] = await post(agent, `https://fcm.googleapis.com/v1/projects/${account.project_id}/messages:send`,
    { 'content-type': 'application/json', authorization: `Bearer ${JSON.parse(tokenText).access_token}` }, message);
  console.log(`send ${sendStatus} ${sendText}`);
  if (sendStatus !== 200) process.exit(1);
}

main().catch((error) => { console.error(error); process.exit(1); });
