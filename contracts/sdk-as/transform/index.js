// The @runnel/contract transform for asc (`--transform @runnel/contract/transform`, set by
// the shared asconfig.json). It does for an AssemblyScript contract what the Rust SDK's
// `#[contract]` macro does for a Rust one:
//
// - every `export function name(ctx: Context, ...): T` of the entry file becomes the export
//   `runnel_fn_<name>`, whose generated body decodes the argument list by the Rust SDK's
//   convention (same bytes accepted, same error messages), calls the function and returns
//   its result as JSON (`void` gives `null`);
// - the entry file re-exports the ABI marker `runnel_abi_v1` and `runnel_alloc`;
// - a class marked `@json` gets an encoder, so it can be returned, emitted or stored as JSON
//   (`{"field":value,...}` in declaration order, as serde encodes a struct);
// - messages are written as UTF-8: `fail(m)` and `ensure(c, m)`, where `m` is a string
//   literal, a template literal or a `+` chain with a literal in it, become writes of each
//   piece into the message buffer (literals as static UTF-8 text, `quoted(x)` quoted in
//   place, other values as Rust's `{}` shows them), and every literal of a message or of
//   `lit("...")` becomes static UTF-8 text (see assembly/text.ts). No UTF-16 copy of a
//   message is stored, and no string is built to fail.
//
// An exported function of the entry file whose first parameter is not `Context` is an error,
// as a `pub fn` without `&mut Context` is for the macro. `@rename("CreateAsset")` on a
// contract function sets the name clients call it by.

import { CommonFlags, DiagnosticCode, NodeKind, Source, SourceKind, Token, Tokenizer } from "assemblyscript";

const SDK = "@runnel/contract";

const UNSIGNED = ["u8", "u16", "u32", "u64"];
const SIGNED = ["i8", "i16", "i32", "i64"];
/** `LiteralKind` (a const enum, not exported at run time). */
const STRING_LITERAL = 2;
const TEMPLATE_LITERAL = 3;
/** The SDK's own sources, which the text rewriting covers too. */
const SDK_SOURCE = /@runnel\/contract\/assembly\/[^/]+$/;
const TEXT_SOURCE = /@runnel\/contract\/assembly\/text(\.ts)?$/;

/** Source text of a node. */
function textOf(node) {
  return node.range.source.text.substring(node.range.start, node.range.end);
}

function decoratorName(decorator) {
  return decorator.name.kind === NodeKind.Identifier ? decorator.name.text : null;
}

/** Removes the decorator called `name` from `declaration`, returning it. */
function takeDecorator(declaration, name) {
  const decorators = declaration.decorators;
  if (!decorators) return null;
  const index = decorators.findIndex((d) => decoratorName(d) === name);
  if (index < 0) return null;
  const [found] = decorators.splice(index, 1);
  if (decorators.length === 0) declaration.decorators = null;
  return found;
}

/** Static text in generated code. */
function lit(text) {
  return `__runnel.__lit(${JSON.stringify(text)})`;
}

/** The argument decoder for a parameter's type, or null if the type is not supported. */
function decoderFor(type, index, name, what) {
  if (type.kind !== NodeKind.NamedType || (type.typeArguments && type.typeArguments.length)) return null;
  const base = type.name.identifier.text;
  const at = `${index}, ${lit(name)}, ${lit(what)}`;
  if (type.isNullable) {
    if (base === "string") return `__runnel.__argStringOrNull(${at})`;
    if (base === "Utf8") return `__runnel.__argUtf8OrNull(${at})`;
    return null;
  }
  if (base === "string") return `__runnel.__argString(${at})`;
  if (base === "Utf8") return `__runnel.__argUtf8(${at})`;
  if (base === "Uint8Array") return `__runnel.__argBytes(${index})`;
  if (base === "bool") return `__runnel.__argBool(${at})`;
  if (UNSIGNED.includes(base)) return `<${base}>__runnel.__argInteger(${at}, 0, <u64>${base}.MAX_VALUE, ${lit(base)})`;
  if (SIGNED.includes(base)) {
    return `<${base}>__runnel.__argInteger(${at}, <u64>${base}.MAX_VALUE + 1, <u64>${base}.MAX_VALUE, ${lit(base)})`;
  }
  return null;
}

function isVoid(type) {
  return type && type.kind === NodeKind.NamedType && type.name.identifier.text === "void";
}

function isContextParam(param) {
  const type = param && param.type;
  return !!type && type.kind === NodeKind.NamedType && !type.isNullable && type.name.identifier.text === "Context";
}

export default class RunnelTransform {
  afterParse(parser) {
    this.parser = parser;
    const user = parser.sources.filter(
      (s) => s.sourceKind === SourceKind.User || s.sourceKind === SourceKind.UserEntry,
    );
    // Files inside node_modules are dependencies, not the contract.
    const own = user.filter((s) => !s.normalizedPath.includes("node_modules/"));
    for (const source of own) this.jsonClasses(source);
    for (const source of own.filter((s) => s.sourceKind === SourceKind.UserEntry)) this.contract(source);
    const sdk = parser.sources.filter((s) => SDK_SOURCE.test(s.normalizedPath) && !TEXT_SOURCE.test(s.normalizedPath));
    const text = new StaticText();
    for (const source of own) new MessageRewriter(this, source, text, false).run();
    for (const source of sdk) new MessageRewriter(this, source, text, true).run();
    const home = parser.sources.find((s) => TEXT_SOURCE.test(s.normalizedPath));
    if (home) this.inject(home, text.functions());
  }

  /** Parses one generated expression in `source`. */
  parseExpression(source, code) {
    const generated = new Source(source.sourceKind, source.normalizedPath, code);
    const tokenizer = new Tokenizer(generated, this.parser.diagnostics);
    const previous = this.parser.currentSource;
    this.parser.currentSource = source;
    const expression = this.parser.parseExpression(tokenizer);
    this.parser.currentSource = previous;
    return expression;
  }

  /** Parses one generated statement in `source`. */
  parseStatement(source, code) {
    const generated = new Source(source.sourceKind, source.normalizedPath, code);
    const tokenizer = new Tokenizer(generated, this.parser.diagnostics);
    const previous = this.parser.currentSource;
    this.parser.currentSource = source;
    const statement = this.parser.parseStatement(tokenizer, false);
    this.parser.currentSource = previous;
    return statement;
  }

  error(node, message) {
    this.parser.error(DiagnosticCode.User_defined_0, node.range, `runnel: ${message}`);
  }

  /** Parses generated top-level code into `source`'s statements. */
  inject(source, code, atStart = false) {
    const generated = new Source(source.sourceKind, source.normalizedPath, code);
    const tokenizer = new Tokenizer(generated, this.parser.diagnostics);
    const previous = this.parser.currentSource;
    this.parser.currentSource = source;
    const statements = [];
    while (!tokenizer.skip(Token.EndOfFile)) {
      const statement = this.parser.parseTopLevelStatement(tokenizer, null);
      if (!statement) break;
      statements.push(statement);
    }
    this.parser.currentSource = previous;
    if (atStart) source.statements.unshift(...statements);
    else source.statements.push(...statements);
    return statements;
  }

  jsonClasses(source) {
    let imported = false;
    for (const statement of source.statements) {
      if (statement.kind !== NodeKind.ClassDeclaration) continue;
      const marker = takeDecorator(statement, "json");
      if (!marker) continue;
      if (!imported) {
        this.inject(
          source,
          `import { JsonWriter as __runnel_JsonWriter, writeJson as __runnel_writeJson, __lit as __runnel_lit } from "${SDK}";\n`,
          true,
        );
        imported = true;
      }
      const fields = statement.members.filter(
        (m) => m.kind === NodeKind.FieldDeclaration && !(m.flags & CommonFlags.Static),
      );
      const body = fields
        .map((f) => `w.field(__runnel_lit(${JSON.stringify(JSON.stringify(f.name.text) + ":")})); __runnel_writeJson(w, this.${f.name.text});`)
        .join(" ");
      const code =
        `class __runnel_json_holder { __runnel_json(w: __runnel_JsonWriter): void ` +
        `{ w.beginObject(); ${body} w.endObject(); } }\n`;
      const [holder] = this.inject(source, code);
      // Keep only the method: move it into the marked class.
      source.statements.splice(source.statements.indexOf(holder), 1);
      for (const member of holder.members) statement.members.push(member);
    }
  }

  contract(source) {
    const functions = [];
    for (const statement of source.statements) {
      if (statement.kind !== NodeKind.FunctionDeclaration) continue;
      const rename = takeDecorator(statement, "rename");
      if (!(statement.flags & CommonFlags.Export)) {
        if (rename) this.error(rename, "@rename applies to contract functions, which are exported");
        continue;
      }
      const fn = this.contractFunction(statement, rename);
      if (!fn) continue;
      const other = functions.find((f) => f.name === fn.name);
      if (other) {
        this.error(statement.name, `two contract functions are named "${fn.name}" (${other.ident} and ${fn.ident})`);
        continue;
      }
      functions.push(fn);
      // The function stays a module-level function; only its wrapper is a wasm export.
      statement.flags &= ~CommonFlags.Export;
    }
    let code = `import * as __runnel from "${SDK}";\n`;
    code += `export { runnel_abi_v1, runnel_alloc } from "${SDK}";\n`;
    for (const fn of functions) code += fn.wrapper;
    this.inject(source, code);
  }

  contractFunction(declaration, rename) {
    const ident = declaration.name.text;
    const signature = declaration.signature;
    const helperHint = `(remove \`export\` from ${ident} if it is a helper)`;
    if (declaration.typeParameters && declaration.typeParameters.length) {
      this.error(declaration.name, `contract functions cannot be generic: ${ident}`);
      return null;
    }
    const params = signature.parameters;
    if (!isContextParam(params[0])) {
      this.error(
        params[0] || declaration.name,
        `the first parameter of contract function ${ident} must be \`ctx: Context\` ${helperHint}`,
      );
      return null;
    }
    let name = ident;
    if (rename) {
      const arg = rename.args && rename.args[0];
      const value = arg && arg.kind === NodeKind.Literal ? arg.value : null;
      if (typeof value !== "string" || !/^[A-Za-z0-9_]+$/.test(value)) {
        this.error(rename, "@rename(\"Name\"): a function name is non-empty and made of ASCII letters, digits and _");
        return null;
      }
      name = value;
    }
    const decodes = [];
    const vars = [];
    let ok = true;
    for (let i = 1; i < params.length; i++) {
      const param = params[i];
      const pname = param.name.text;
      const what = `: argument ${i} (${pname}): `;
      const decoder = param.initializer ? null : decoderFor(param.type, i - 1, name, what);
      if (!decoder) {
        this.error(
          param.type || param,
          `parameter ${pname} of contract function ${ident} has type ${param.type ? textOf(param.type) : "(none)"}` +
            `; a parameter is string, Utf8, Uint8Array, bool, an integer (u8..u64, i8..i64), ` +
            `string | null or Utf8 | null, with no default`,
        );
        ok = false;
        continue;
      }
      decodes.push(`const __p${i} = ${decoder};`);
      vars.push(`__p${i}`);
    }
    const returnType = signature.returnType;
    if (!returnType || textOf(returnType).trim() === "") {
      this.error(declaration.name, `contract function ${ident} must declare its return type (void for none)`);
      ok = false;
    }
    if (!ok) return null;
    const count = params.length - 1;
    const call = `${ident}(__runnel.__newContext()${vars.map((v) => `, ${v}`).join("")})`;
    const finish = isVoid(returnType) ? `${call};\n  __runnel.__returnNull();` : `__runnel.__returnJson(${call});`;
    const countMessage = `: expected ${count} ${count === 1 ? "argument" : "arguments"}, got `;
    const wrapper =
      `export function runnel_fn_${name}(__ptr: usize, __len: i32): void {\n` +
      `  __runnel.__args(__ptr, __len, ${count}, ${lit(name)}, ${lit(countMessage)});\n` +
      decodes.map((d) => `  ${d}\n`).join("") +
      `  ${finish}\n}\n`;
    return { ident, name, wrapper };
  }
}

/**
 * The program's static UTF-8 text: each distinct text once, as a function of text.ts
 * returning the address of its length and bytes. A function is compiled only if called,
 * so the text of code the contract does not use never reaches the module, and the
 * optimizer inlines each call to a constant.
 */
class StaticText {
  constructor() {
    this.ids = new Map();
    this.texts = [];
  }

  /** The name of the function that gives `text` (`__T<n>`), or null if it is too long. */
  name(text) {
    let id = this.ids.get(text);
    if (id === undefined) {
      if (Buffer.byteLength(text, "utf8") >= 1 << 15) return null;
      id = this.texts.length;
      this.texts.push(text);
      this.ids.set(text, id);
    }
    return `__T${id}`;
  }

  /** The functions' code. */
  functions() {
    return this.texts
      .map((text, id) => {
        const utf8 = [...Buffer.from(text, "utf8")];
        const length = utf8.length < 0x80 ? [utf8.length] : [(utf8.length & 0x7f) | 0x80, utf8.length >> 7];
        return `export function __T${id}(): usize { return memory.data<u8>([${[...length, ...utf8].join(",")}]); }\n`;
      })
      .join("");
  }
}

function isNode(value) {
  return value !== null && typeof value === "object" && typeof value.kind === "number" && value.range !== undefined;
}

function isStringLiteral(node) {
  return node.kind === NodeKind.Literal && node.literalKind === STRING_LITERAL;
}

function isTemplate(node) {
  return node.kind === NodeKind.Literal && node.literalKind === TEMPLATE_LITERAL && !node.tag;
}

/** Rewrites the messages and static texts of one source (see the file's header). */
class MessageRewriter {
  constructor(transform, source, text, sdk) {
    this.transform = transform;
    this.source = source;
    this.text = text;
    this.sdk = sdk;
    this.used = false;
    // The local names of the SDK's message functions in this source.
    this.names = new Map();
    if (sdk) {
      for (const name of ["fail", "ensure", "quoted", "txt", "lit"]) this.names.set(name, name);
    } else {
      for (const statement of source.statements) {
        if (statement.kind !== NodeKind.Import || statement.path.value !== SDK || !statement.declarations) continue;
        for (const d of statement.declarations) {
          if (["fail", "ensure", "quoted"].includes(d.foreignName.text)) this.names.set(d.name.text, d.foreignName.text);
        }
      }
    }
  }

  run() {
    this.walk(this.source);
    if (!this.used) return;
    const from = this.sdk ? "./text" : `${SDK}/assembly/text`;
    this.transform.inject(
      this.source,
      `import * as __runnel_T from "${from}";\n` +
        `import { __mStart as __runnel_mStart, __mText as __runnel_mText, ` +
        `__mValue as __runnel_mValue, __mQuoted as __runnel_mQuoted, __mFail as __runnel_mFail } from "${from}";\n`,
      true,
    );
  }

  /** Post-order: children first, then the node itself may be replaced. */
  walk(node) {
    for (const key of Object.keys(node)) {
      if (key === "range" || key === "parent") continue;
      const value = node[key];
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          if (!isNode(value[i])) continue;
          this.walk(value[i]);
          const replaced = this.rewrite(value[i]);
          if (replaced) value[i] = replaced;
        }
      } else if (isNode(value) && value.kind !== NodeKind.Source) {
        this.walk(value);
        const replaced = this.rewrite(value);
        if (replaced) node[key] = replaced;
      }
    }
  }

  /** The SDK function a call calls (`fail`, `ensure`, `quoted`, `txt`, `lit`), if any. */
  callee(node) {
    if (node.kind !== NodeKind.Call) return null;
    const e = node.expression;
    if (e.kind === NodeKind.Identifier) {
      if (e.text === "__runnel_lit") return "lit";
      return this.names.get(e.text) ?? null;
    }
    if (e.kind === NodeKind.PropertyAccess && e.expression.kind === NodeKind.Identifier && e.expression.text === "__runnel") {
      if (e.property.text === "__lit") return "lit";
    }
    return null;
  }

  rewrite(node) {
    if (node.kind === NodeKind.Expression) {
      // `ensure(c, message)` as a statement: `if (!(c)) <message written and failed>`.
      const call = node.expression;
      if (this.callee(call) !== "ensure" || call.args.length !== 2) return null;
      const pieces = this.pieces(call.args[1]);
      if (!pieces) return null;
      const holes = [call.args[0]];
      const code = `if (!(__runnel_hole0)) ${this.failCode(pieces, holes)};`;
      return this.fill(this.transform.parseStatement(this.source, code), holes);
    }
    const fn = this.callee(node);
    if (fn === "lit") {
      const arg = node.args.length === 1 ? node.args[0] : null;
      if (!arg || !isStringLiteral(arg)) return null;
      const name = this.text.name(arg.value);
      if (!name) return null;
      this.used = true;
      return this.transform.parseExpression(this.source, `__runnel_T.${name}()`);
    }
    if (fn === "fail" && node.args.length === 1) {
      const pieces = this.pieces(node.args[0]);
      if (!pieces) return null;
      const holes = [];
      return this.fill(this.transform.parseExpression(this.source, this.failCode(pieces, holes)), holes);
    }
    return null;
  }

  /** The code that writes `pieces` and fails; values become `__runnel_hole<i>` placeholders. */
  failCode(pieces, holes) {
    this.used = true;
    const parts = ["__runnel_mStart()"];
    for (const piece of pieces) {
      if (piece.text !== undefined) {
        if (piece.text === "") continue;
        const name = this.text.name(piece.text);
        if (!name) {
          holes.push(piece.node);
          parts.push(`__runnel_mValue(__runnel_hole${holes.length - 1})`);
        } else {
          parts.push(`__runnel_mText(__runnel_T.${name}())`);
        }
        continue;
      }
      holes.push(piece.node);
      const hole = `__runnel_hole${holes.length - 1}`;
      if (piece.kind === "quoted") parts.push(`__runnel_mQuoted(${hole})`);
      else if (piece.kind === "static") parts.push(`__runnel_mText(${hole})`);
      else parts.push(`__runnel_mValue(${hole})`);
    }
    parts.push("__runnel_mFail()");
    return `(${parts.join(", ")})`;
  }

  /** Replaces the placeholders in generated `node` by the original expressions. */
  fill(node, holes) {
    const visit = (n) => {
      for (const key of Object.keys(n)) {
        if (key === "range" || key === "parent") continue;
        const value = n[key];
        const replace = (v) => {
          if (v.kind === NodeKind.Identifier && v.text.startsWith("__runnel_hole")) return holes[Number(v.text.slice(13))];
          visit(v);
          return v;
        };
        if (Array.isArray(value)) {
          for (let i = 0; i < value.length; i++) if (isNode(value[i])) value[i] = replace(value[i]);
        } else if (isNode(value) && value.kind !== NodeKind.Source) {
          n[key] = replace(value);
        }
      }
    };
    visit(node);
    return node;
  }

  /**
   * The pieces of a message: `{text}` for literal text, `{node, kind}` for a value (`value`,
   * `quoted` or `static` text); null if the message is not built from a literal.
   */
  pieces(node) {
    if (node.kind === NodeKind.Parenthesized) return this.pieces(node.expression);
    if (isStringLiteral(node)) return [{ text: node.value }];
    if (isTemplate(node)) {
      const out = [];
      for (let i = 0; i < node.parts.length; i++) {
        out.push({ text: node.parts[i] });
        if (i < node.expressions.length) out.push(...this.valuePieces(node.expressions[i]));
      }
      return out;
    }
    if (node.kind === NodeKind.Binary && node.operator === Token.Plus) {
      const operands = [];
      let n = node;
      while (n.kind === NodeKind.Binary && n.operator === Token.Plus) {
        operands.unshift(n.right);
        n = n.left;
      }
      operands.unshift(n);
      // A string concatenation from the start (JavaScript adds `1 + 2 + "a"` as numbers first).
      const literal = (e) => isStringLiteral(e) || isTemplate(e) || ["quoted", "txt"].includes(this.callee(e));
      if (!literal(operands[0]) && !literal(operands[1])) return null;
      const out = [];
      for (const operand of operands) out.push(...this.valuePieces(operand));
      return out;
    }
    return null;
  }

  valuePieces(node) {
    if (isStringLiteral(node) || isTemplate(node)) return this.pieces(node);
    if (node.kind === NodeKind.Parenthesized) {
      const inner = this.pieces(node.expression);
      if (inner) return inner;
    }
    if (node.kind === NodeKind.Call) {
      const fn = this.callee(node);
      if (fn === "quoted" && node.args.length === 1) return [{ node: node.args[0], kind: "quoted" }];
      if (fn === "txt" && node.args.length === 1) return [{ node: node.args[0], kind: "static" }];
      const e = node.expression;
      if (e.kind === NodeKind.PropertyAccess && e.property.text === "toString" && node.args.length === 0) {
        return [{ node: e.expression, kind: "value" }];
      }
    }
    return [{ node, kind: "value" }];
  }
}
