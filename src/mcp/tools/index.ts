import type { McpTool } from '../tool.js';
import { getExecutionPrice, getOrderBook, getPrice } from './books.js';
import { getCandles } from './candles.js';
import { getCoverage } from './coverage.js';
import { getMarket, searchMarkets } from './markets.js';
import { getExportLink, getTickSummary } from './ticks.js';

/** Every tool, in the order tools/list gives them (docs/MCP.md §3). */
export const TOOLS: readonly McpTool[] = [
  searchMarkets,
  getMarket,
  getOrderBook,
  getPrice,
  getExecutionPrice,
  getCandles,
  getTickSummary,
  getCoverage,
  getExportLink,
];
