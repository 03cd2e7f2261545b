/**
 * Lexer and parser for the sim's shell subset (see README.md in this directory for the exact
 * grammar). Anything outside the subset — pipes, subshells, command substitution, here-docs,
 * functions, `case` — is a syntax error rather than being silently misread, so a script that the
 * sim accepts means the same thing it would mean to a real `sh`.
 */

type WordPart =
  | { kind: 'literal'; text: string; quoted: boolean }
  /** `$NAME`, `${NAME}`, `$?`, `$$`, `$0`… expanded when the command runs. */
  | { kind: 'variable'; name: string; quoted: boolean };

export interface Word {
  parts: WordPart[];
}

export interface Redirect {
  /** The file descriptor redirected: 1 (stdout) or 2 (stderr). */
  fd: 1 | 2;
  /** `>` truncates, `>>` appends, `>&` duplicates another descriptor. */
  op: '>' | '>>' | '>&';
  target: Word;
}

export interface Assignment {
  name: string;
  value: Word;
}

export type Command =
  | { kind: 'simple'; assignments: Assignment[]; words: Word[]; redirects: Redirect[] }
  | { kind: 'list'; items: Command[] }
  | { kind: 'and'; left: Command; right: Command }
  | { kind: 'or'; left: Command; right: Command }
  | { kind: 'not'; body: Command }
  | { kind: 'background'; body: Command }
  | { kind: 'loop'; until: boolean; condition: Command; body: Command }
  | { kind: 'for'; name: string; items: Word[]; body: Command }
  | { kind: 'if'; condition: Command; then: Command; otherwise: Command | null };

export class ShellSyntaxError extends Error {
  override readonly name = 'ShellSyntaxError';
}

type Token =
  | { kind: 'word'; word: Word }
  | { kind: 'op'; op: ';' | '\n' | '&&' | '||' | '&' }
  | { kind: 'redirect'; fd: 1 | 2; op: '>' | '>>' | '>&' }
  | { kind: 'eof' };

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const NAME_START = /[A-Za-z_]/;
const NAME_CHAR = /[A-Za-z0-9_]/;
const SPECIAL_PARAMS = new Set(['?', '$', '#', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '@', '*', '!']);
const WORD_END = new Set([' ', '\t', '\n', ';', '&', '|', '<', '>', '(', ')']);

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const peek = (offset = 0): string => source[i + offset] ?? '';

  while (i < source.length) {
    const c = peek();
    if (c === ' ' || c === '\t' || c === '\r') { i++; continue; }
    if (c === '\\' && peek(1) === '\n') { i += 2; continue; }
    if (c === '#') {
      while (i < source.length && peek() !== '\n') i++;
      continue;
    }
    if (c === '\n' || c === ';') {
      if (c === ';' && peek(1) === ';') throw new ShellSyntaxError('syntax error: unexpected ";;"');
      tokens.push({ kind: 'op', op: c });
      i++;
      continue;
    }
    if (c === '&') {
      if (peek(1) === '&') { tokens.push({ kind: 'op', op: '&&' }); i += 2; }
      else { tokens.push({ kind: 'op', op: '&' }); i++; }
      continue;
    }
    if (c === '|') {
      if (peek(1) === '|') { tokens.push({ kind: 'op', op: '||' }); i += 2; continue; }
      throw new ShellSyntaxError('pipes are not supported by the sim shell');
    }
    if (c === '(' || c === ')') throw new ShellSyntaxError(`syntax error: unexpected "${c}" (subshells are not supported)`);
    if (c === '<') throw new ShellSyntaxError('input redirection is not supported by the sim shell');
    // A redirection, possibly with an explicit descriptor number glued in front: `2>`, `1>>`.
    const fdMatch = /^([0-9]?)>(>|&)?/.exec(source.slice(i, i + 3));
    if (fdMatch && (c === '>' || /[0-9]/.test(c))) {
      const fdText = fdMatch[1] ?? '';
      const fd = fdText === '' ? 1 : Number(fdText);
      if (fd !== 1 && fd !== 2) throw new ShellSyntaxError(`redirecting descriptor ${fd} is not supported`);
      const op = fdMatch[2] === '>' ? '>>' : fdMatch[2] === '&' ? '>&' : '>';
      tokens.push({ kind: 'redirect', fd, op });
      i += fdMatch[0].length;
      continue;
    }
    const [word, next] = readWord(source, i);
    tokens.push({ kind: 'word', word });
    i = next;
  }
  tokens.push({ kind: 'eof' });
  return tokens;
}

/** Reads one word starting at `start`; returns it and the index just past it. */
function readWord(source: string, start: number): [Word, number] {
  const parts: WordPart[] = [];
  let literal = '';
  let literalQuoted = false;
  let i = start;
  const flush = (): void => {
    if (literal !== '') parts.push({ kind: 'literal', text: literal, quoted: literalQuoted });
    literal = '';
  };
  const addText = (text: string, quoted: boolean): void => {
    if (quoted !== literalQuoted) flush();
    literalQuoted = quoted;
    literal += text;
  };
  const readVariable = (quoted: boolean): void => {
    // `source[i]` is the `$`.
    const next = source[i + 1] ?? '';
    if (next === '(') throw new ShellSyntaxError('command substitution $(...) is not supported');
    if (next === '{') {
      const close = source.indexOf('}', i + 2);
      if (close < 0) throw new ShellSyntaxError('missing "}"');
      const name = source.slice(i + 2, close);
      if (!NAME.test(name) && !SPECIAL_PARAMS.has(name)) {
        throw new ShellSyntaxError(`\${${name}}: parameter operators are not supported`);
      }
      flush();
      parts.push({ kind: 'variable', name, quoted });
      i = close + 1;
      return;
    }
    if (SPECIAL_PARAMS.has(next)) {
      flush();
      parts.push({ kind: 'variable', name: next, quoted });
      i += 2;
      return;
    }
    if (NAME_START.test(next)) {
      let end = i + 1;
      while (end < source.length && NAME_CHAR.test(source[end] ?? '')) end++;
      flush();
      parts.push({ kind: 'variable', name: source.slice(i + 1, end), quoted });
      i = end;
      return;
    }
    addText('$', quoted);
    i++;
  };

  while (i < source.length) {
    const c = source[i] ?? '';
    if (WORD_END.has(c)) break;
    if (c === '`') throw new ShellSyntaxError('command substitution `...` is not supported');
    if (c === '\\') {
      if (i + 1 < source.length) addText(source[i + 1] ?? '', true);
      i += 2;
      continue;
    }
    if (c === "'") {
      const close = source.indexOf("'", i + 1);
      if (close < 0) throw new ShellSyntaxError('unterminated quoted string');
      addText(source.slice(i + 1, close), true);
      // An empty '' still makes the word exist (e.g. `trap '' TERM`).
      if (close === i + 1) { flush(); parts.push({ kind: 'literal', text: '', quoted: true }); }
      i = close + 1;
      continue;
    }
    if (c === '"') {
      i++;
      let sawAnything = false;
      for (;;) {
        if (i >= source.length) throw new ShellSyntaxError('unterminated quoted string');
        const d = source[i] ?? '';
        if (d === '"') { i++; break; }
        sawAnything = true;
        if (d === '`') throw new ShellSyntaxError('command substitution `...` is not supported');
        if (d === '\\' && '$`"\\\n'.includes(source[i + 1] ?? '')) {
          if (source[i + 1] !== '\n') addText(source[i + 1] ?? '', true);
          i += 2;
          continue;
        }
        if (d === '$') { readVariable(true); continue; }
        addText(d, true);
        i++;
      }
      if (!sawAnything) { flush(); parts.push({ kind: 'literal', text: '', quoted: true }); }
      continue;
    }
    if (c === '$') { readVariable(false); continue; }
    addText(c, false);
    i++;
  }
  flush();
  return [{ parts }, i];
}

/** The word's text when it is a plain unquoted literal (how reserved words are recognised). */
function plainText(word: Word): string | null {
  const [only, ...rest] = word.parts;
  if (!only || rest.length > 0 || only.kind !== 'literal' || only.quoted) return null;
  return only.text;
}

const RESERVED = new Set(['while', 'until', 'for', 'do', 'done', 'if', 'then', 'elif', 'else', 'fi', 'in', '!', '{', '}', 'case', 'esac', 'function']);
const UNSUPPORTED_RESERVED = new Set(['{', '}', 'case', 'esac', 'function']);

export function parse(source: string): Command {
  return new Parser(tokenize(source)).parseProgram();
}

class Parser {
  private pos = 0;
  constructor(private readonly tokens: Token[]) {}

  parseProgram(): Command {
    const list = this.parseList(new Set());
    const token = this.peek();
    if (token.kind !== 'eof') throw this.unexpected(token);
    return list;
  }

  /** A sequence of and-or lists separated by `;`, `&` or newlines, up to one of `stopWords`. */
  private parseList(stopWords: ReadonlySet<string>): Command {
    const items: Command[] = [];
    for (;;) {
      this.skipSeparators();
      const token = this.peek();
      if (token.kind === 'eof') break;
      if (token.kind === 'word') {
        const text = plainText(token.word);
        if (text !== null && stopWords.has(text)) break;
      }
      let item = this.parseAndOr();
      const next = this.peek();
      if (next.kind === 'op' && next.op === '&') {
        item = { kind: 'background', body: item };
        this.pos++;
      } else if (next.kind === 'op' && (next.op === ';' || next.op === '\n')) {
        this.pos++;
      } else if (next.kind !== 'eof' && !(next.kind === 'word' && stopWords.has(plainText(next.word) ?? ''))) {
        throw this.unexpected(next);
      }
      items.push(item);
    }
    return items.length === 1 && items[0] ? items[0] : { kind: 'list', items };
  }

  private parseAndOr(): Command {
    let left = this.parsePipeline();
    for (;;) {
      const token = this.peek();
      if (token.kind !== 'op' || (token.op !== '&&' && token.op !== '||')) return left;
      this.pos++;
      this.skipNewlines();
      const right = this.parsePipeline();
      left = { kind: token.op === '&&' ? 'and' : 'or', left, right };
    }
  }

  private parsePipeline(): Command {
    if (this.atReserved('!')) {
      this.pos++;
      return { kind: 'not', body: this.parseCommand() };
    }
    return this.parseCommand();
  }

  private parseCommand(): Command {
    const token = this.peek();
    const text = token.kind === 'word' ? plainText(token.word) : null;
    if (text === 'while' || text === 'until') return this.parseLoop(text === 'until');
    if (text === 'if') return this.parseIf();
    if (text === 'for') return this.parseFor();
    if (text !== null && UNSUPPORTED_RESERVED.has(text)) {
      throw new ShellSyntaxError(`"${text}" is not supported by the sim shell`);
    }
    if (text !== null && RESERVED.has(text)) throw this.unexpected(token);
    return this.parseSimple();
  }

  private parseLoop(until: boolean): Command {
    this.pos++;
    const condition = this.parseList(new Set(['do']));
    this.expectReserved('do');
    const body = this.parseList(new Set(['done']));
    this.expectReserved('done');
    this.rejectTrailingRedirect();
    return { kind: 'loop', until, condition, body };
  }

  private parseIf(): Command {
    this.pos++;
    const condition = this.parseList(new Set(['then']));
    this.expectReserved('then');
    const then = this.parseList(new Set(['elif', 'else', 'fi']));
    let otherwise: Command | null = null;
    if (this.atReserved('elif')) {
      // `elif` is an `if` nested in the else branch that shares the outer `fi`.
      otherwise = this.parseIf();
      return { kind: 'if', condition, then, otherwise };
    }
    if (this.atReserved('else')) {
      this.pos++;
      otherwise = this.parseList(new Set(['fi']));
    }
    this.expectReserved('fi');
    this.rejectTrailingRedirect();
    return { kind: 'if', condition, then, otherwise };
  }

  private parseFor(): Command {
    this.pos++;
    const nameToken = this.peek();
    const name = nameToken.kind === 'word' ? plainText(nameToken.word) : null;
    if (name === null || !NAME.test(name)) throw this.unexpected(nameToken);
    this.pos++;
    const items: Word[] = [];
    this.skipNewlines();
    if (this.atReserved('in')) {
      this.pos++;
      for (let token = this.peek(); token.kind === 'word'; token = this.peek()) {
        items.push(token.word);
        this.pos++;
      }
    }
    this.skipSeparators();
    this.expectReserved('do');
    const body = this.parseList(new Set(['done']));
    this.expectReserved('done');
    this.rejectTrailingRedirect();
    return { kind: 'for', name, items, body };
  }

  private parseSimple(): Command {
    const assignments: Assignment[] = [];
    const words: Word[] = [];
    const redirects: Redirect[] = [];
    for (;;) {
      const token = this.peek();
      if (token.kind === 'redirect') {
        this.pos++;
        const target = this.peek();
        if (target.kind !== 'word') throw this.unexpected(target);
        this.pos++;
        redirects.push({ fd: token.fd, op: token.op, target: target.word });
        continue;
      }
      if (token.kind !== 'word') break;
      this.pos++;
      const assignment = words.length === 0 ? asAssignment(token.word) : null;
      if (assignment) assignments.push(assignment);
      else words.push(token.word);
    }
    if (assignments.length === 0 && words.length === 0 && redirects.length === 0) {
      throw this.unexpected(this.peek());
    }
    return { kind: 'simple', assignments, words, redirects };
  }

  private rejectTrailingRedirect(): void {
    if (this.peek().kind === 'redirect') {
      throw new ShellSyntaxError('redirecting a compound command is not supported by the sim shell');
    }
  }

  private peek(): Token {
    return this.tokens[this.pos] ?? { kind: 'eof' };
  }

  private atReserved(word: string): boolean {
    const token = this.peek();
    return token.kind === 'word' && plainText(token.word) === word;
  }

  private expectReserved(word: string): void {
    if (!this.atReserved(word)) throw this.unexpected(this.peek());
    this.pos++;
  }

  private skipNewlines(): void {
    for (let t = this.peek(); t.kind === 'op' && t.op === '\n'; t = this.peek()) this.pos++;
  }

  private skipSeparators(): void {
    for (let t = this.peek(); t.kind === 'op' && (t.op === '\n' || t.op === ';'); t = this.peek()) this.pos++;
  }

  private unexpected(token: Token): ShellSyntaxError {
    return new ShellSyntaxError(`syntax error: unexpected ${describe(token)}`);
  }
}

function describe(token: Token): string {
  switch (token.kind) {
    case 'eof': return 'end of file';
    case 'op': return token.op === '\n' ? 'newline' : `"${token.op}"`;
    case 'redirect': return `"${token.op}"`;
    case 'word': return `"${token.word.parts.map((p) => (p.kind === 'literal' ? p.text : `$${p.name}`)).join('')}"`;
  }
}

/** `NAME=value` as the leading words of a simple command. */
function asAssignment(word: Word): Assignment | null {
  const first = word.parts[0];
  if (!first || first.kind !== 'literal' || first.quoted) return null;
  const eq = first.text.indexOf('=');
  if (eq <= 0 || !NAME.test(first.text.slice(0, eq))) return null;
  const rest = first.text.slice(eq + 1);
  const valueParts: WordPart[] = rest === '' ? [] : [{ kind: 'literal', text: rest, quoted: false }];
  return { name: first.text.slice(0, eq), value: { parts: [...valueParts, ...word.parts.slice(1)] } };
}
