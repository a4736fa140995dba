// verify.js reads {"secret", "headers", "body"} on stdin and verifies the
// body and headers with the official Standard Webhooks library, as a
// receiver of pginbox's alerts would. It prints the verified payload as
// JSON and exits 0, or prints the library's error and exits 1.
const { Webhook } = require("standardwebhooks");

let input = "";
process.stdin.on("data", (c) => (input += c));
process.stdin.on("end", () => {
  const { secret, headers, body } = JSON.parse(input);
  try {
    const payload = new Webhook(secret).verify(body, headers);
    process.stdout.write(JSON.stringify(payload));
  } catch (err) {
    process.stdout.write(String(err && err.message ? err.message : err));
    process.exit(1);
  }
});
