/**
 * Every public member of the package has editor docs: each export of every entry point of
 * package.json `exports` (`tensor-fusion-iac`, `/cdk8s`, `/pulumi`), the members of the namespaces
 * they export, each public member of their classes, and each property of the props, args and options
 * types they take (nested object types included), as a user's editor shows them.
 */
import { readFileSync } from 'fs';
import { join, resolve } from 'path';
import * as ts from 'typescript';

const REPO = resolve(__dirname, '../..');
/** The sources of the entry points: `./build/lib/index.d.ts` is built from `lib/index.ts`. */
const ENTRY_POINTS = Object.values(
  JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).exports as Record<string, string | { types?: string }>,
).flatMap((target) =>
  typeof target === 'object' && target.types ? [join(REPO, target.types.replace(/^\.\/build\//, '').replace(/\.d\.ts$/, '.ts'))] : [],
);

/** Whether a declaration is ours (not from node_modules or the TypeScript libs). */
const ours = (d: ts.Declaration) => !d.getSourceFile().fileName.includes('/node_modules/');

/** Names (`Export.member.nested`) of public members without a doc comment. */
function undocumented(): string[] {
  const program = ts.createProgram(ENTRY_POINTS, {
    strict: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.CommonJS,
    skipLibCheck: true,
    types: ['node'],
  });
  const checker = program.getTypeChecker();
  const missing = new Set<string>();
  const seen = new Set<ts.Type>();
  const hasDoc = (symbol: ts.Symbol) => ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim().length > 0;

  /** Properties of a type that users fill in or read (our declarations only), recursively. */
  function visitType(type: ts.Type, path: string): void {
    if (seen.has(type)) return;
    seen.add(type);
    if (type.isUnion() || type.isIntersection()) return type.types.forEach((t) => visitType(t, path));
    const element =
      checker.getIndexInfosOfType(type)[0]?.type ??
      (checker.isArrayType(type) ? checker.getTypeArguments(type as ts.TypeReference)[0] : undefined);
    if (element) visitType(element, `${path}[]`);
    if (!(type.flags & ts.TypeFlags.Object) || type.getCallSignatures().length > 0) return;
    for (const property of type.getProperties()) {
      const declarations = (property.getDeclarations() ?? []).filter(ours);
      if (declarations.length === 0) continue;
      const name = `${path}.${property.getName()}`;
      if (!hasDoc(property)) missing.add(name);
      visitType(checker.getTypeOfSymbolAtLocation(property, declarations[0]), name);
    }
  }

  /** Exports of a module (an entry point, or a namespace it exports: `api.`), recursively. */
  function visitModule(module: ts.Symbol, prefix: string): void {
    for (const exported of checker.getExportsOfModule(module)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const name = `${prefix}${exported.getName()}`;
      const declaration = symbol.getDeclarations()?.[0];
      if (declaration && ts.isSourceFile(declaration)) {
        visitModule(symbol, `${name}.`);
        continue;
      }
      if (!hasDoc(symbol)) missing.add(name);
      if (!declaration) continue;
      if (ts.isClassDeclaration(declaration)) {
        // Public members of the class, and the props its constructor takes.
        const instance = checker.getDeclaredTypeOfSymbol(symbol);
        for (const member of instance.getProperties()) {
          const decl = member.getDeclarations()?.[0];
          if (!decl || !ours(decl) || ts.getCombinedModifierFlags(decl) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) continue;
          if (!hasDoc(member)) missing.add(`${name}.${member.getName()}`);
        }
        const constructor = checker.getTypeOfSymbolAtLocation(symbol, declaration).getConstructSignatures()[0];
        constructor
          ?.getParameters()
          .forEach((p) => visitType(checker.getTypeOfSymbolAtLocation(p, declaration), `${name}(${p.getName()})`));
      } else if (ts.isFunctionDeclaration(declaration)) {
        const signature = checker.getSignatureFromDeclaration(declaration)!;
        signature
          .getParameters()
          .slice(1)
          .forEach((p) => visitType(checker.getTypeOfSymbolAtLocation(p, declaration), `${name}(${p.getName()})`));
      } else if (ts.isInterfaceDeclaration(declaration) || ts.isTypeAliasDeclaration(declaration)) {
        visitType(checker.getDeclaredTypeOfSymbol(symbol), name);
      }
    }
  }

  for (const entry of ENTRY_POINTS) visitModule(checker.getSymbolAtLocation(program.getSourceFile(entry)!)!, '');
  return [...missing].sort();
}

describe('API docs', () => {
  it('reads the entry points from package.json exports', () => {
    expect(ENTRY_POINTS.map((f) => f.slice(REPO.length + 1))).toEqual([
      'lib/index.ts',
      'components/pulumi/index.ts',
      'components/cdk8s/index.ts',
    ]);
  });

  it('documents every export of every entry point, every public member and every prop', () => {
    expect(undocumented()).toEqual([]);
  }, 120_000);
});
