/**
 * meta-memory for the Vercel AI SDK (`ai` 6: language-model middleware v3): the `memory`
 * tool, the firewall's reporting of every other tool's result, and injection of the observation block.
 * Import it from `meta-memory/ai-sdk` (the main entry point does not load `ai`).
 *
 * ```ts
 * import { generateText, stepCountIs, wrapLanguageModel } from "ai";
 * import { AiSdkMemory } from "meta-memory/ai-sdk";
 *
 * const memory = await AiSdkMemory.create({ handle, identity: "agent:concierge", sessionKey: "s1" });
 * const result = await generateText({
 *   model: wrapLanguageModel({ model, middleware: memory.middleware() }),
 *   tools: memory.tools({ web_fetch: webFetch }),
 *   stopWhen: stepCountIs(5),
 *   prompt: "Summarise https://example.com",
 * });
 * ```
 *
 * - `memory.tools(tools)`: your tools, each `execute` wrapped so its result (or error) is classified
 *   by `meta/turn/tool_result` before it is returned to the AI SDK, and so before the model sees it;
 *   plus the `memory` tool (`meta/agent_memory/tool` for this identity and session: an LLM-authored
 *   write the firewall quarantines while the session is tainted).
 * - `memory.middleware()`: a language-model middleware that, before every model call, reports each tool
 *   result in the prompt not found trusted yet under its call id and tool name (an id alone says nothing: a
 *   provider may number calls anew) (results of tools without `execute`, a resumed conversation's
 *   history; results of provider-executed tools count as untrusted server-tool content) and adds the
 *   turn's quoted observation block (`meta/turn/inject` on the last user message) as a system message
 *   after the leading ones; and, after the call, reports the provider-executed tool results of the
 *   response (web search run by the provider) before the AI SDK runs any tool of that response.
 *
 * A reporting failure (gateway unreachable, access denied) rejects: the generation stops rather than
 * let a tool result reach the model unclassified.
 */

import { jsonSchema, tool, type LanguageModelMiddleware, type Tool, type ToolSet } from "ai";

import type { MetaHandle } from "./handle.js";
import type { ToolProvenance, ToolResultVerdict } from "./types.js";

/** How {@link AiSdkMemory.create} binds the memory to one identity's session. */
export interface AiSdkMemoryOptions {
  handle: MetaHandle;
  identity: string;
  sessionKey: string;
  /** The realm of the session (default: the gateway's). */
  realm?: string;
  /** Tool name -> provenance, for MCP tools (`{ kind: "mcp", sourceId: <server> }`). */
  provenance?: Record<string, ToolProvenance>;
  /** Add the recorder protocol (how to use the `memory` tool) to the system messages (default true). */
  protocol?: boolean;
}

const REMEMBERED_CALLS = 4096;

type PromptMessage = { role: string; content: unknown };
type Part = { type?: string; toolCallId?: string; toolName?: string; providerExecuted?: boolean; text?: string };

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === "object" && value !== null && Symbol.asyncIterator in value;
}

function lastUserText(prompt: readonly PromptMessage[]): string {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const message = prompt[i]!;
    if (message.role !== "user") continue;
    if (typeof message.content === "string") return message.content;
    if (Array.isArray(message.content)) {
      return (message.content as Part[]).filter((p) => p.type === "text" && typeof p.text === "string").map((p) => p.text).join("\n");
    }
    return "";
  }
  return "";
}

/** meta-memory for AI SDK generations of one identity's session (see the module documentation). */
export class AiSdkMemory {
  readonly handle: MetaHandle;
  readonly identity: string;
  readonly sessionKey: string;
  readonly realm: string | undefined;
  readonly toolName: string;
  /** Why the last injection added nothing (`null` when it added a block). */
  lastSkipReason: string | null = null;
  /** The results found trusted, by call id and tool name: the backstop does not report them again. */
  private readonly reported = new Map<string, true>();
  /** The call ids of this memory's own `memory` tool calls: the backstop skips such an id only under that name. */
  private readonly own = new Map<string, true>();
  private readonly provenance: Record<string, ToolProvenance>;
  private readonly protocolText: string;
  private readonly definition: { name: string; description: string; inputSchema: Record<string, unknown> };
  private noted = false;
  private block: { query: string; text: string | null } | undefined;

  private constructor(options: AiSdkMemoryOptions, definition: AiSdkMemory["definition"], protocol: string) {
    this.handle = options.handle;
    this.identity = options.identity;
    this.sessionKey = options.sessionKey;
    this.realm = options.realm;
    this.provenance = { ...(options.provenance ?? {}) };
    this.definition = definition;
    this.toolName = definition.name;
    this.protocolText = options.protocol === false ? "" : protocol;
  }

  /** Bind to a session; reads the `memory` tool's definition from the gateway (`meta/agent_memory/tool_schema`). */
  static async create(options: AiSdkMemoryOptions): Promise<AiSdkMemory> {
    if (!options || typeof options.identity !== "string" || typeof options.sessionKey !== "string" || !options.handle) {
      throw new TypeError("AiSdkMemory.create takes { handle, identity, sessionKey, realm? }");
    }
    const schema = await options.handle.agentMemoryToolSchema();
    return new AiSdkMemory(options, { name: schema.name, description: schema.description, inputSchema: schema.inputSchema },
      schema.protocol ?? "");
  }

  /**
   * Whether the result of call `callId` named `toolName` need not be reported again: found trusted under that id
   * and name, or this memory's own `memory` call of that id. A provider may number calls anew in each response, so
   * an id alone says nothing of a result under another name.
   */
  private seen(callId: unknown, toolName: string): boolean {
    if (typeof callId !== "string") return false;
    return this.reported.has(JSON.stringify([callId, toolName])) || (toolName === this.toolName && this.own.has(callId));
  }

  private static remember(into: Map<string, true>, key: string): void {
    into.delete(key);
    into.set(key, true);
    while (into.size > REMEMBERED_CALLS) into.delete(into.keys().next().value as string);
  }

  /** `callId` is one of this memory's own `memory` tool calls. */
  private markOwn(callId: unknown): void {
    if (typeof callId === "string" && callId) AiSdkMemory.remember(this.own, callId);
  }

  private async note(): Promise<void> {
    if (this.noted) return;
    await this.handle.sessionNote({ identity: this.identity, sessionKey: this.sessionKey, ...(this.realm ? { realm: this.realm } : {}) });
    this.noted = true;
  }

  /**
   * Classify one tool result (`meta/turn/tool_result`) unless `toolCallId` was found trusted already (`fresh`: a
   * result that just ran, reported whatever its id). Only a trusted verdict is remembered by call id: an untrusted
   * result is reported again each time it is met, so a `meta/session/reset` while the conversation still holds it
   * does not launder it. Resolves to the verdict (`undefined` when nothing was reported).
   */
  async report(
    toolName: string,
    options: { toolCallId?: string; isError?: boolean; serverTool?: boolean; fresh?: boolean } = {},
  ): Promise<ToolResultVerdict | undefined> {
    if (!options.fresh && options.toolCallId !== undefined && this.seen(options.toolCallId, toolName)) return undefined;
    await this.note();
    const provenance = this.provenance[toolName];
    const verdict = await this.handle.turnToolResult({
      identity: this.identity,
      sessionKey: this.sessionKey,
      toolName: toolName || "unknown_tool",
      ...(provenance ? { provenance } : {}),
      ...(options.isError ? { isError: true } : {}),
      ...(options.serverTool ? { serverTool: true } : {}),
      ...(this.realm ? { realm: this.realm } : {}),
    });
    if (verdict.trusted && options.toolCallId) AiSdkMemory.remember(this.reported, JSON.stringify([options.toolCallId, toolName]));
    return verdict;
  }

  /**
   * The `memory` tool for this identity and session, in the session's realm: the write gate reads the
   * taint the reports above recorded there.
   */
  memoryTool(): Tool {
    return tool({
      description: this.definition.description,
      inputSchema: jsonSchema<Record<string, unknown>>(this.definition.inputSchema as never),
      execute: async (input: Record<string, unknown>, options: { toolCallId: string }) => {
        this.markOwn(options.toolCallId); // our own result: nothing to classify
        await this.note();
        const out = await this.handle.agentMemoryTool({
          identity: this.identity,
          sessionKey: this.sessionKey,
          arguments: input,
          ...(this.realm ? { realm: this.realm } : {}),
        });
        return out.text;
      },
    }) as Tool;
  }

  /**
   * `tools` with each `execute` wrapped so its result is classified before it is returned (a tool without
   * `execute` is left as it is: the middleware reports its result when it reaches the prompt), plus the
   * `memory` tool. Throws a `TypeError` when `tools` already has a tool named `memory`.
   */
  tools<T extends ToolSet>(tools: T): T & Record<string, Tool> {
    if (Object.prototype.hasOwnProperty.call(tools, this.toolName)) {
      throw new TypeError(`tools already has a tool named '${this.toolName}'`);
    }
    const out: Record<string, Tool> = {};
    for (const [name, original] of Object.entries(tools) as [string, Tool][]) {
      const execute = (original as { execute?: (input: unknown, options: { toolCallId: string }) => unknown }).execute;
      if (typeof execute !== "function") {
        out[name] = original;
        continue;
      }
      out[name] = {
        ...original,
        execute: (input: unknown, options: { toolCallId: string }) => this.runReported(name, execute, input, options),
      } as Tool;
    }
    out[this.toolName] = this.memoryTool();
    return out as T & Record<string, Tool>;
  }

  private runReported(
    name: string,
    execute: (input: unknown, options: { toolCallId: string }) => unknown,
    input: unknown,
    options: { toolCallId: string },
  ): unknown {
    let result: unknown;
    try {
      result = execute(input, options);
    } catch (err) {
      return this.report(name, { toolCallId: options.toolCallId, isError: true, fresh: true }).then(() => {
        throw err;
      });
    }
    if (isAsyncIterable(result)) {
      const source = result;
      const self = this;
      return (async function* () {
        await self.report(name, { toolCallId: options.toolCallId, fresh: true }); // before the first (preliminary) output
        yield* source;
      })();
    }
    return Promise.resolve(result).then(
      async (value) => {
        await this.report(name, { toolCallId: options.toolCallId, fresh: true });
        return value;
      },
      async (err: unknown) => {
        await this.report(name, { toolCallId: options.toolCallId, isError: true, fresh: true });
        throw err;
      },
    );
  }

  /**
   * Report every tool result in `prompt` not found trusted yet (the backstop before a model call): an untrusted
   * one at every model call whose prompt still holds it, each untrusted source (tool name, server tool or not)
   * once a call however many of its results the prompt holds.
   */
  async reportPrompt(prompt: readonly PromptMessage[]): Promise<void> {
    const untrusted = new Set<string>();
    for (const message of prompt) {
      if ((message.role !== "tool" && message.role !== "assistant") || !Array.isArray(message.content)) continue;
      for (const part of message.content as Part[]) {
        if (part.type !== "tool-result") continue;
        const name = part.toolName ?? "unknown_tool";
        if (this.seen(part.toolCallId, name)) continue;
        if (name === this.toolName && message.role === "tool") {
          this.markOwn(part.toolCallId); // the memory tool's own result (tools() refuses another tool of its name)
          continue;
        }
        const serverTool = message.role === "assistant";
        const source = JSON.stringify([name, serverTool]);
        if (untrusted.has(source)) continue;
        const verdict = await this.report(name, { ...(part.toolCallId ? { toolCallId: part.toolCallId } : {}), serverTool });
        if (verdict !== undefined && !verdict.trusted) untrusted.add(source);
      }
    }
  }

  private async observation(prompt: readonly PromptMessage[]): Promise<string | null> {
    const query = lastUserText(prompt);
    if (this.block !== undefined && this.block.query === query) return this.block.text;
    await this.note();
    const out = await this.handle.turnInject({
      identity: this.identity,
      sessionKey: this.sessionKey,
      queryText: query,
      surface: "turn",
      ...(this.realm ? { realm: this.realm } : {}),
    });
    this.lastSkipReason = out.skipReason;
    this.block = { query, text: out.text };
    return out.text;
  }

  /** The language-model middleware (see the module documentation). */
  middleware(): LanguageModelMiddleware {
    const self = this;
    return {
      specificationVersion: "v3",
      async transformParams({ params }) {
        const prompt = params.prompt as unknown as PromptMessage[];
        await self.reportPrompt(prompt);
        const text = await self.observation(prompt);
        const extra = [self.protocolText, text].filter((t): t is string => typeof t === "string" && t.length > 0);
        if (!extra.length) return params;
        let at = 0;
        while (at < prompt.length && prompt[at]!.role === "system") at++;
        const added = extra.map((content) => ({ role: "system" as const, content }));
        return { ...params, prompt: [...params.prompt.slice(0, at), ...added, ...params.prompt.slice(at)] as typeof params.prompt };
      },
      async wrapGenerate({ doGenerate }) {
        const result = await doGenerate();
        for (const part of result.content as Part[]) {
          if (part.type === "tool-result") {
            await self.report(part.toolName ?? "server_tool", {
              ...(part.toolCallId ? { toolCallId: part.toolCallId } : {}),
              serverTool: true,
              fresh: true,
            });
          }
        }
        return result;
      },
      async wrapStream({ doStream }) {
        const { stream, ...rest } = await doStream();
        const reported = stream.pipeThrough(
          new TransformStream({
            async transform(part, controller) {
              const p = part as Part;
              if (p.type === "tool-result") {
                await self.report(p.toolName ?? "server_tool", {
                  ...(p.toolCallId ? { toolCallId: p.toolCallId } : {}),
                  serverTool: true,
                  fresh: true,
                });
              }
              controller.enqueue(part);
            },
          }),
        );
        return { stream: reported, ...rest };
      },
    };
  }
}
