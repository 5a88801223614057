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
//   (`{"field":value,...}` in declaration order, as serde encodes a struct).
//
// An exported function of the entry file whose first parameter is not `Context` is an error,
// as a `pub fn` without `&mut Context` is for the macro. `@rename("CreateAsset")` on a
// contract function sets the name clients call it by.

import { CommonFlags, DiagnosticCode, NodeKind, Source, SourceKind, Token, Tokenizer } from "assemblyscript";

const SDK = "@runnel/contract";

const UNSIGNED = ["u8", "u16", "u32", "u64"];
const SIGNED = ["i8", "i16", "i32", "i64"];

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

/** The argument decoder for a parameter's type, or null if the type is not supported. */
function decoderFor(type, index, name) {
  if (type.kind !== NodeKind.NamedType || (type.typeArguments && type.typeArguments.length)) return null;
  const base = type.name.identifier.text;
  const at = `${index}, ${JSON.stringify(name)}`;
  if (type.isNullable) {
    if (base === "string") return `__a.stringOrNull(${at})`;
    if (base === "Utf8") return `__a.utf8OrNull(${at})`;
    return null;
  }
  if (base === "string") return `__a.string(${at})`;
  if (base === "Utf8") return `__a.utf8(${at})`;
  if (base === "Uint8Array") return `__a.bytes(${index})`;
  if (base === "bool") return `__a.bool(${at})`;
  if (UNSIGNED.includes(base)) return `<${base}>__a.uint(${at}, <u64>${base}.MAX_VALUE, "${base}")`;
  if (SIGNED.includes(base)) {
    return `<${base}>__a.int(${at}, <i64>${base}.MIN_VALUE, <i64>${base}.MAX_VALUE, "${base}")`;
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
          `import { JsonWriter as __runnel_JsonWriter, writeJson as __runnel_writeJson } from "${SDK}";\n`,
          true,
        );
        imported = true;
      }
      const fields = statement.members.filter(
        (m) => m.kind === NodeKind.FieldDeclaration && !(m.flags & CommonFlags.Static),
      );
      const body = fields
        .map((f) => `w.key(${JSON.stringify(f.name.text)}); __runnel_writeJson(w, this.${f.name.text});`)
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
      const decoder = param.initializer ? null : decoderFor(param.type, i - 1, pname);
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
    const wrapper =
      `export function runnel_fn_${name}(__ptr: usize, __len: i32): void {\n` +
      `  const __a = __runnel.__Args.decode(__ptr, __len, ${JSON.stringify(name)}, ${count});\n` +
      decodes.map((d) => `  ${d}\n`).join("") +
      `  ${finish}\n}\n`;
    return { ident, name, wrapper };
  }
}
