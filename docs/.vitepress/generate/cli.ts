import type { Argument, Command, Option } from 'commander';
import { buildProgram } from '../../../agent/cli/program.ts';
import { banner, cell, code, text } from './markdown.ts';

/** A description and what follows it as sentences. */
function sentence(description: string, more: string): string {
  const d = cell(description);
  return more === '' ? d : `${d}${d === '' || /[.!?)]$/.test(d) ? '' : '.'} ${more.trim()}`.trim();
}

/** The default of an option or argument as the help shows it; undefined when there is none worth saying. */
function defaultOf(x: { defaultValue?: unknown; defaultValueDescription?: string }): string | undefined {
  if (x.defaultValueDescription) return x.defaultValueDescription;
  const v = x.defaultValue;
  if (v === undefined || v === false || (Array.isArray(v) && v.length === 0)) return undefined;
  return JSON.stringify(v);
}

function usageOf(path: string[], cmd: Command): string {
  const args = cmd.registeredArguments.map((a: Argument) => {
    const name = `${a.name()}${a.variadic ? '...' : ''}`;
    return a.required ? `<${name}>` : `[${name}]`;
  });
  return [...path, ...(cmd.options.some((o) => !o.hidden) ? ['[options]'] : []), ...(cmd.commands.length > 0 ? ['<command>'] : []), ...args].join(' ');
}

function argumentRows(cmd: Command): string[] {
  if (cmd.registeredArguments.length === 0) return [];
  const rows = cmd.registeredArguments.map((a: Argument) => {
    const choices = a.argChoices ? `One of: ${a.argChoices.map((c) => code(c)).join(', ')}.` : '';
    const d = defaultOf(a);
    return `| ${code(a.name())} | ${a.required ? 'yes' : 'no'} | ${sentence(a.description ?? '', choices)} | ${d ? code(d) : ''} |`;
  });
  return ['| Argument | Required | Description | Default |', '|---|---|---|---|', ...rows, ''];
}

function optionRows(cmd: Command): string[] {
  const options = cmd.options.filter((o: Option) => !o.hidden);
  if (options.length === 0) return [];
  const rows = options.map((o: Option) => {
    const choices = o.argChoices ? `One of: ${o.argChoices.map((c) => code(c)).join(', ')}.` : '';
    const env = o.envVar ? ` Environment: ${code(o.envVar)}.` : '';
    const d = defaultOf(o);
    return `| ${code(o.flags)} | ${sentence(o.description, `${choices}${env}${o.mandatory ? ' Required.' : ''}`)} | ${d ? code(d) : ''} |`;
  });
  return ['| Option | Description | Default |', '|---|---|---|', ...rows, ''];
}

/** One section per command, subcommands after their parent, depth-first in the program's order. */
function sections(cmd: Command, path: string[], depth: number): string[] {
  const heading = '#'.repeat(Math.min(depth, 4));
  const out = [`${heading} ${path.join(' ')}`, '', text(cmd.description()), '', '```text', usageOf(path, cmd), '```', ''];
  if (cmd.aliases().length > 0) out.push(`Aliases: ${cmd.aliases().map((a) => code(a)).join(', ')}.`, '');
  out.push(...argumentRows(cmd), ...optionRows(cmd));
  for (const sub of cmd.commands) out.push(...sections(sub, [...path, sub.name()], depth + 1));
  return out;
}

/**
 * docs/reference/cli.md from the commander program itself (agent/cli/program.ts with every command
 * loaded): each command and subcommand, its arguments, its options with their descriptions, choices
 * and defaults. A new flag without `npm run docs:generate` fails test/unit/docs-generated.test.ts.
 */
export async function cliReference(): Promise<string> {
  const program = await buildProgram();
  const head = [
    banner('agent/cli/'),
    '# Command line reference',
    '',
    `Every command of ${code('kupenstack')} (also installed as ${code('kubectl-kupenstack')}), generated from the command definitions.`,
    'Exit codes and what each command prints are on the pages of the tasks that use them.',
    '',
  ];
  const body = program.commands.flatMap((c) => sections(c, ['kupenstack', c.name()], 2));
  return [...head, ...optionRows(program), ...body].join('\n').replace(/\n{3,}/g, '\n\n').trimEnd() + '\n';
}
