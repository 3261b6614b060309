/** The fence languages whose blocks are commands to run; other blocks are output or files. */
export const SHELL_LANGS = new Set(["sh", "bash", "shell", "console"]);

/**
 * Splits a shell block into the commands a reader would type, one at a time: a line ending in
 * `\` goes on with the next, a here-document (`<<'EOF'` ... `EOF`) is part of its command, and
 * blank lines and whole-line comments are left out. In a `console` block only the lines after a
 * `$ ` prompt are commands; the others are their output.
 */
export function shellCommands(lang: string, text: string): string[] {
  const lines = text.split("\n");
  const commands: string[] = [];
  const prompted = lang === "console";
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i] as string;
    if (prompted) {
      if (!line.startsWith("$ ")) continue;
      line = line.slice(2);
    }
    if (line.trim() === "" || line.trimStart().startsWith("#")) continue;
    const parts = [line];
    while ((parts[parts.length - 1] as string).endsWith("\\") && i + 1 < lines.length) {
      parts.push(lines[++i] as string);
    }
    const heredoc = /<<-?\s*(['"]?)(\w+)\1/.exec(parts.join("\n"));
    if (heredoc) {
      const end = heredoc[2] as string;
      while (i + 1 < lines.length) {
        const next = lines[++i] as string;
        parts.push(next);
        if (next.trim() === end) break;
      }
    }
    commands.push(parts.join("\n"));
  }
  return commands;
}
